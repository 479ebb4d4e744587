package fusion

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

func TestReadInput(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	q0, q1 := d.Splits["test"].Queries[0], d.Splits["test"].Queries[1]
	qid, t0, t1 := d.Queries[q0].ID, d.Tools[0].ID, d.Tools[1].ID
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.run", qid+" Q0 "+t1+" 1 2 x\n"+qid+" Q0 "+t0+" 2 1 x\n")
	in, err := ReadInput(good, d)
	if err != nil {
		t.Fatal(err)
	}
	qs := []rank.Query{{Index: q0, Text: "a"}}
	rk, err := in.Rank(context.Background(), qs, 1)
	if err != nil || !reflect.DeepEqual(rk, []rank.Ranking{{Tools: []int{1}, Scores: []float32{2}}}) {
		t.Errorf("top 1: %v, %v", rk, err)
	}
	in.Name = "-runs good"
	if _, err := in.Rank(context.Background(), append(qs, rank.Query{Index: q1, Text: "b"}), 0); err == nil ||
		!strings.HasPrefix(err.Error(), `-runs good: no ranking for 1 of the 2 queries asked (first: "b")`) {
		t.Errorf("missing query: %v", err)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"q.run", "nope Q0 " + t0 + " 1 1 x\n", `query id "nope" is not a query of dataset`},
		{"t.run", qid + " Q0 zz 1 1 x\n", `document id "zz" is not a tool of dataset`},
		{"m.run", qid + " Q0 " + t0 + " 1\n", "m.run:1: want 6 fields"},
	} {
		if _, err := ReadInput(write(tc.name, tc.text), d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestRanker fuses two live inputs by RRF and by interpolation, and tunes the weights on two
// queries that only the second input ranks right.
func TestRanker(t *testing.T) {
	a := &Input{Name: "a", Live: scored{0: {{0, 1}, {1, 0.5}, {2, 0}}, 1: {{3, 1}, {4, 0.5}, {5, 0}}}}
	b := &Input{Name: "b", Live: scored{0: {{2, 1}, {1, 0.9}, {0, 0}}, 1: {{5, 1}, {3, 0.9}, {4, 0}}}}
	qs := []rank.Query{{Index: 0, Text: "x"}, {Index: 1, Text: "y"}}
	f := &Ranker{Inputs: []*Input{a, b}, Depth: 3, K: 60}
	got, err := f.RankQueries(context.Background(), qs, 2)
	if err != nil {
		t.Fatal(err)
	}
	per, err := f.Lists(context.Background(), qs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range qs {
		want, _ := RRF(per[i], 60)
		if !reflect.DeepEqual(got[i].Tools, want.Tools[:2]) {
			t.Errorf("query %d: rrf %v, want %v", i, got[i].Tools, want.Tools[:2])
		}
	}
	f.Norm = rerank.NormMinMax
	var log strings.Builder
	r1 := func(ranked, rel []int) float64 {
		if len(ranked) > 0 && len(rel) > 0 && ranked[0] == rel[0] {
			return 1
		}
		return 0
	}
	w, err := f.Tune(context.Background(), qs, [][]int{{2}, {5}}, TuneOptions{Steps: 2, Metric: "recall@1", Score: r1, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w, []float64{0, 1}) {
		t.Errorf("weights %v, want [0 1]", w)
	}
	if want := "fusion: minmax: dev recall@1 (2 queries) by weights 0/1:100.00 0.5/0.5:"; !strings.HasPrefix(log.String(), want) {
		t.Errorf("report %q, want the prefix %q", log.String(), want)
	}
	f.W = w
	if got, err = f.RankQueries(context.Background(), qs, 1); err != nil || got[0].Tools[0] != 2 || got[1].Tools[0] != 5 {
		t.Errorf("tuned: %v, %v", got, err)
	}
}

// scored is a QueryRanker of fixed (tool, score) lists by query index.
type scored map[int][][2]float32

func (s scored) RankQueries(_ context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	out := make([]rank.Ranking, len(qs))
	for i, q := range qs {
		for j, ts := range s[q.Index] {
			if k > 0 && j >= k {
				break
			}
			out[i].Tools = append(out[i].Tools, int(ts[0]))
			out[i].Scores = append(out[i].Scores, ts[1])
		}
	}
	return out, nil
}
