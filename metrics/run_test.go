package metrics

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rank"
)

// handData has 5 tools; train query 0 uses tools {0, 1}; test queries 1 {2}, 2 {1, 3},
// 3 (no relevant tool: not ranked, counted as skipped) and 4 {4}.
func handData() *data.Dataset {
	d := &data.Dataset{Name: "hand", Tools: make([]data.Tool, 5)}
	for _, q := range []string{"q0", "q1", "q2", "q3", "q4"} {
		d.Queries = append(d.Queries, data.Query{ID: q, Text: "text of " + q})
	}
	d.Splits = map[string]*data.Split{
		"train": {Name: "train", Queries: []int{0}, Relevant: map[int][]int{0: {0, 1}}},
		"test":  {Name: "test", Queries: []int{1, 2, 3, 4}, Relevant: map[int][]int{1: {2}, 2: {1, 3}, 4: {4}}},
	}
	return d
}

// scorer ranks by fixed per-query tool scores and records what it was asked.
type scorer struct {
	scores map[int][]float32
	asked  []int
	k      int
}

func (s *scorer) RankQueries(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	s.k = k
	f := rank.ScoreFunc(func(_ context.Context, q rank.Query) ([]float32, error) {
		s.asked = append(s.asked, q.Index)
		if q.Text != "text of q"+string(rune('0'+q.Index)) {
			return nil, errors.New("wrong text for query")
		}
		return s.scores[q.Index], nil
	})
	return f.RankQueries(ctx, qs, k)
}

func TestEvaluateSplit(t *testing.T) {
	// Scores give the rankings q1: 2 3 1 0 4; q2: 3 0 1 2 4; q4: 0 1 2 3 4.
	scores := map[int][]float32{
		1: {0.1, 0.2, 0.9, 0.3, 0.0},
		2: {0.5, 0.4, 0.3, 0.9, 0.1},
		4: {0.9, 0.8, 0.7, 0.6, 0.5},
	}
	// Reversed scores give q1: 4 0 1 3 2; q2: 4 2 1 0 3; q4: 4 3 2 1 0.
	reversed := map[int][]float32{}
	for q, s := range scores {
		r := make([]float32, len(s))
		for i, v := range s {
			r[i] = 1 - v
		}
		reversed[q] = r
	}
	// q2 (relevant {1,3}) at cutoff 3: hits at ranks 1 and 3, DCG 1 + 1/log2(4) = 1.5 over
	// IDCG 1 + 1/log2(3).
	q2n3 := 1.5 / (1 + l2(2))
	for _, tc := range []struct {
		name   string
		scores map[int][]float32
		ks     []int
		wantK  int
		want   map[string]float64 // percent, averaged over the 3 judged queries
	}{
		{"order", scores, []int{1, 3}, 3, map[string]float64{
			// R@1: q1 1, q2 1/2, q4 0; N@1: q1 1, q2 1 (IDCG over min(2,1) = 1 hit), q4 0.
			"recall@1": 100 * 1.5 / 3, "ndcg@1": 100 * 2.0 / 3, "comp@1": 100 * 1.0 / 3,
			"recall@3": 100 * 2.0 / 3, "ndcg@3": 100 * (1 + q2n3) / 3, "comp@3": 100 * 2.0 / 3,
		}},
		// Unsorted cutoffs: the ranker must be asked for max(ks) = 5, or q4's tool 4 at rank 5
		// is lost.
		{"cutoffs", scores, []int{5, 1}, 5, map[string]float64{
			"recall@5": 100, "comp@5": 100, "ndcg@5": 100 * (1 + q2n3 + l2(5)) / 3,
			"recall@1": 50, "ndcg@1": 100 * 2.0 / 3, "comp@1": 100 * 1.0 / 3,
		}},
		{"reversed order", reversed, []int{1, 3}, 3, map[string]float64{
			// q1: 2 at rank 5; q2: 1 at rank 3, 3 at rank 5; q4: 4 at rank 1.
			"recall@1": 100 * 1.0 / 3, "ndcg@1": 100 * 1.0 / 3, "comp@1": 100 * 1.0 / 3,
			"recall@3": 100 * 1.5 / 3, "ndcg@3": 100 * (l2(3)/(1+l2(2)) + 1) / 3, "comp@3": 100 * 1.0 / 3,
		}},
		{"default cutoffs", scores, nil, 10, map[string]float64{
			"recall@10": 100, "comp@10": 100, "recall@5": 100, "comp@3": 100 * 2.0 / 3,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := handData()
			r := &scorer{scores: tc.scores}
			rep, err := EvaluateSplit(context.Background(), d, d.Splits["test"], r, tc.ks)
			if err != nil {
				t.Fatal(err)
			}
			if r.k != tc.wantK || !reflect.DeepEqual(r.asked, []int{1, 2, 4}) {
				t.Errorf("ranker asked for top %d of queries %v, want top %d of [1 2 4]", r.k, r.asked, tc.wantK)
			}
			if rep.Overall.N != 3 || rep.Overall.Skipped != 1 || rep.Split != "test" || rep.Dataset != "hand" {
				t.Errorf("report %s/%s of %d queries, %d skipped; want hand/test, 3 and 1", rep.Dataset, rep.Split, rep.Overall.N, rep.Overall.Skipped)
			}
			got := rep.Map()
			for name, w := range tc.want {
				if v, ok := got[name]; !ok || math.Abs(v-w) > 1e-9 {
					t.Errorf("%s = %v, want %v", name, v, w)
				}
			}
			if !reflect.DeepEqual(got, rep.Overall.Map()) {
				t.Errorf("Report.Map %v differs from Overall.Map", got)
			}
		})
	}
}

func TestEvaluateSplitDev(t *testing.T) {
	// A dev split carved from train is not one of d's named splits; its queries are training
	// queries, so there is no seen/unseen grouping.
	d := handData()
	d.Splits["train"] = &data.Split{Name: "train", Queries: []int{0, 1}, Relevant: map[int][]int{0: {0, 1}, 1: {2}}}
	dev := &data.Split{Name: "train-dev", Queries: []int{1}, Relevant: map[int][]int{1: {2}}}
	r := rank.Fixed{1: {0, 2}}
	rep, err := EvaluateSplit(context.Background(), d, dev, r, []int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := EvaluateDev(context.Background(), d, dev, r, []int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"recall@1": 0, "ndcg@1": 0, "comp@1": 0, "recall@2": 100, "ndcg@2": 100 * l2(2), "comp@2": 100}
	for name, w := range want {
		if v, ok := got[name]; !ok || math.Abs(v-w) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, v, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("dev metrics %v, want exactly %v", got, want)
	}
	if _, err := EvaluateDev(context.Background(), d, dev, rank.Fixed{}, nil); err == nil {
		t.Error("EvaluateDev without rankings: no error")
	}
	if _, ok := rep.Subsets["seen-tools"]; ok || rep.ToolRecall != nil || rep.Split != "train-dev" {
		t.Errorf("dev report %s has seen/unseen groups: %v %v", rep.Split, rep.Subsets, rep.ToolRecall)
	}
}

// short returns one ranking too few.
type short struct{}

func (short) RankQueries(_ context.Context, qs []rank.Query, _ int) ([]rank.Ranking, error) {
	return make([]rank.Ranking, len(qs)-1), nil
}

type failing struct{}

func (failing) RankQueries(context.Context, []rank.Query, int) ([]rank.Ranking, error) {
	return nil, errors.New("boom")
}

func TestEvaluateSplitErrors(t *testing.T) {
	d := handData()
	test := d.Splits["test"]
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		r    rank.QueryRanker
		ks   []int
		want string
	}{
		{"cutoff 0", rank.Fixed{}, []int{1, 0}, "cutoff 0"},
		{"missing ranking", short{}, nil, "2 rankings for 3 queries"},
		{"ranker error", failing{}, nil, "rank hand/test: boom"},
		{"query without ranking", rank.Fixed{1: {2}, 2: {1}}, nil, "none for query 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := EvaluateSplit(ctx, d, test, tc.r, tc.ks); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := Run(ctx, d, "dev", nil, nil); err == nil || !strings.Contains(err.Error(), "have test, train") {
		t.Errorf("unknown split: %v", err)
	}
}

// texts is a text Ranker that ranks tool len(query) % 5 first.
type texts struct{}

func (texts) Rank(_ context.Context, qs []string, k int) ([]rank.Ranking, error) {
	out := make([]rank.Ranking, len(qs))
	for i, q := range qs {
		s := make([]float32, 5)
		s[len(q)%5] = 1
		out[i] = rank.TopK(s, k)
	}
	return out, nil
}

func TestRun(t *testing.T) {
	// "text of qN" has 10 characters: tool 0 first, then 1 2 3 4 by the index tie-break.
	d := handData()
	rep, err := Run(context.Background(), d, "test", texts{}, []int{2})
	if err != nil {
		t.Fatal(err)
	}
	// q1 {2} miss; q2 {1,3}: 1 at rank 2, R 1/2, N (1/log2 3)/(1 + 1/log2 3); q4 {4} miss.
	want := map[string]float64{"recall@2": 100 * 0.5 / 3, "ndcg@2": 100 * l2(2) / (1 + l2(2)) / 3, "comp@2": 0}
	for name, w := range want {
		if v := rep.Map()[name]; math.Abs(v-w) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, v, w)
		}
	}
}
