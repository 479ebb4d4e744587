package evaluate

import (
	"context"
	"slices"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// TestStageRerank: the top Depth of the first stage's ranking reordered by the
// cross-encoder's scores, or by their minmax interpolation with the first stage's, the rest
// in the first stage's order; pairs scored once; Tune picks the smallest weight that ranks
// best on dev.
func TestStageRerank(t *testing.T) {
	first := rank.ScoreFunc(func(context.Context, rank.Query) ([]float32, error) {
		return []float32{0.9, 0.8, 0.7, 0.6, 0.5, 0.4}, nil
	})
	ce := []float32{0.1, 0.9, 0.5, 0.99, 0.2, 0.3}
	scored := 0
	score := func(_ context.Context, _ []string, pairs []rank.Pair) ([]float32, error) {
		out := make([]float32, len(pairs))
		for i, p := range pairs {
			out[i] = ce[p.Tool]
		}
		scored += len(pairs)
		return out, nil
	}
	w0, w5 := 0.0, 0.5
	qs := []rank.Query{{Index: 7, Text: "q"}}
	for _, c := range []struct {
		name string
		w    *float64
		k    int
		want []int
	}{
		{"cross-encoder alone", nil, 0, []int{1, 2, 0, 3, 4, 5}},
		{"w 0: the first stage", &w0, 0, []int{0, 1, 2, 3, 4, 5}},
		// minmax over the top 3: cross-encoder 0, 1, 0.5; first stage 1, 0.5, 0.
		{"w 0.5", &w5, 0, []int{1, 0, 2, 3, 4, 5}},
		{"w 0.5, k 2", &w5, 2, []int{1, 0}},
		{"w 0.5, k 4", &w5, 4, []int{1, 0, 2, 3}},
	} {
		s := &StageRerank{First: first, Score: score, Tools: len(ce), Depth: 3, Weight: c.w}
		scored = 0
		for range 2 {
			rk, err := s.RankQueries(context.Background(), qs, c.k)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rk[0].Tools, c.want) {
				t.Errorf("%s: %v, want %v", c.name, rk[0].Tools, c.want)
			}
		}
		if scored != 3 {
			t.Errorf("%s: %d pairs scored in two rankings, want the top 3 once", c.name, scored)
		}
	}

	s := &StageRerank{First: first, Score: score, Tools: len(ce), Depth: 3}
	dev, err := s.Queries(context.Background(), qs, [][]int{{1}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := metrics.ParseMetric("ndcg@1")
	if err != nil {
		t.Fatal(err)
	}
	// Tool 1 first from w 0.4: 0.4·1 + 0.6·0.5 = 0.7 > 0.6·1 (w 0.3: 0.65 < 0.7).
	val, err := s.Tune(context.Background(), dev, 10, rerank.TuneOptions{Metric: "ndcg@1", Score: m})
	if err != nil {
		t.Fatal(err)
	}
	if s.Weight == nil || *s.Weight != 0.4 || val != 1 {
		t.Errorf("tuned weight %v, dev ndcg@1 %v: want 0.4, 1", s.Weight, val)
	}
}

// libraryFirst is a first stage that ranks within the queries' libraries and records the k
// it is asked for.
type libraryFirst struct {
	rank.QueryRanker
	asked []int
}

func (f *libraryFirst) RankQueries(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	f.asked = append(f.asked, k)
	return f.QueryRanker.RankQueries(ctx, qs, k)
}

func (*libraryFirst) RanksWithinLibraries() {}

// TestStageRerankInLibraries: over a first stage that ranks within the queries' libraries,
// InLibraries is a metrics.LibraryRanker, so that an evaluation of a multi-source dataset
// (metrics.WithinLibraries) asks it for the top k and it asks its first stage for the top
// max(k, Depth), as tuning does, not for every tool (k 0).
func TestStageRerankInLibraries(t *testing.T) {
	ce := []float32{0.1, 0.9, 0.5, 0.99, 0.2, 0.3}
	score := func(_ context.Context, _ []string, pairs []rank.Pair) ([]float32, error) {
		out := make([]float32, len(pairs))
		for i, p := range pairs {
			out[i] = ce[p.Tool]
		}
		return out, nil
	}
	d := &data.Dataset{Name: "two", Libraries: []data.Library{{Name: "a"}, {Name: "b"}}}
	for _, c := range []struct{ k, depth, want int }{{5, 3, 5}, {2, 3, 3}} {
		first := &libraryFirst{QueryRanker: rank.ScoreFunc(func(context.Context, rank.Query) ([]float32, error) {
			return []float32{0.9, 0.8, 0.7, 0.6, 0.5, 0.4}, nil
		})}
		s := &StageRerank{First: first, Score: score, Tools: len(ce), Depth: c.depth}
		r := s.InLibraries()
		if _, ok := r.(metrics.LibraryRanker); !ok {
			t.Fatalf("InLibraries is a %T, not a metrics.LibraryRanker", r)
		}
		rk, err := metrics.WithinLibraries(d, nil, r).RankQueries(context.Background(), []rank.Query{{Index: 0, Text: "q"}}, c.k)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(first.asked, []int{c.want}) || len(rk[0].Tools) != c.k {
			t.Errorf("k %d, depth %d: first stage asked for %v, %d tools returned; want [%d], %d", c.k, c.depth, first.asked, len(rk[0].Tools), c.want, c.k)
		}
	}
}
