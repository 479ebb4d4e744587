package evaluate

import (
	"context"
	"hash/fnv"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// runs writes a random bi-encoder run, an mlc and a querytype classifier run over the
// embedded dataset.
func runs(t *testing.T) (d *data.Dataset, be, mlc, qt string, o RunOptions) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs models")
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	be, mlc, qt = filepath.Join(dir, "be"), filepath.Join(dir, "mlc"), filepath.Join(dir, "qt")
	if err := exporttest.WriteRun(be, exporttest.Options{Hidden: 16, Layers: 1, Heads: 2}, bk, 3); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteClassifierRun(mlc, exporttest.ClassifierOptions{}, bk, 1); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteClassifierRun(qt, exporttest.ClassifierOptions{Kind: classifier.KindQueryType}, bk, 2); err != nil {
		t.Fatal(err)
	}
	return d, be, mlc, qt, RunOptions{Backend: bk, Vectors: "text"}
}

// TestLoadRun loads each kind of run by what its directory holds and checks its rankings
// against the model's own ranker.
func TestLoadRun(t *testing.T) {
	d, be, mlc, qt, o := runs(t)
	qs := []rank.Query{{Index: 0, Text: d.Queries[0].Text}, {Index: 1, Text: d.Queries[1].Text}}
	texts := []string{qs[0].Text, qs[1].Text}
	emb, err := biencoder.LoadRun(be, o.Backend)
	if err != nil {
		t.Fatal(err)
	}
	br, err := emb.Ranker(d, "text", "train")
	if err != nil {
		t.Fatal(err)
	}
	cm, err := classifier.LoadRun(mlc, o.Backend)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := classifier.NewRanker(cm, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir, desc string
		want      rank.Ranker
	}{
		{be, "run " + be + " (text tool vectors)", br},
		{mlc, "run " + mlc, cr},
	} {
		r, desc, err := LoadRun(tc.dir, d, o)
		if err != nil {
			t.Fatal(err)
		}
		if desc != tc.desc {
			t.Errorf("description %q, want %q", desc, tc.desc)
		}
		got, err := r.RankQueries(context.Background(), qs, 5)
		if err != nil {
			t.Fatal(err)
		}
		want, err := tc.want.Rank(context.Background(), texts, 5)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if !reflect.DeepEqual(got[i].Tools, want[i].Tools) {
				t.Errorf("%s: query %d ranked %v, want %v", desc, i, got[i].Tools, want[i].Tools)
			}
		}
	}
	if _, _, err := LoadRun(qt, d, o); err == nil || !strings.Contains(err.Error(), "mlc") {
		t.Errorf("a querytype run as a ranker: %v", err)
	}
}

// oracle is a cross-encoder scoring a query's relevant APIs 0.95 and the others below 0.5.
type oracle map[string]map[int]bool

func (o oracle) score(q string, api int) float32 {
	if o[q][api] {
		return 0.95
	}
	h := fnv.New32a()
	h.Write([]byte(q))
	h.Write([]byte{byte(api), byte(api >> 8)})
	return 0.1 + 0.4*float32(h.Sum32()%1000)/1000
}

func (o oracle) Score(_ context.Context, q string, apis []int) ([]float32, error) {
	out := make([]float32, len(apis))
	for i, a := range apis {
		out[i] = o.score(q, a)
	}
	return out, nil
}

func (o oracle) ScorePairs(_ context.Context, qs []string, pairs []crossencoder.Pair) ([]float32, error) {
	out := make([]float32, len(pairs))
	for i, p := range pairs {
		out[i] = o.score(qs[p.Query], p.Tool)
	}
	return out, nil
}

// TestRerank prepares the dev and test queries (coarse lists, oracle types, every score the
// pipeline needs in the cache), ranks with the oracle cross-encoder, and runs the ablation
// table.
func TestRerank(t *testing.T) {
	d, be, _, _, o := runs(t)
	train, dev, err := d.CarveDev("train", 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	or := oracle{}
	for _, s := range d.Splits {
		for q, rel := range s.Relevant {
			if or[d.Queries[q].Text] == nil {
				or[d.Queries[q].Text] = map[int]bool{}
			}
			for _, a := range rel {
				or[d.Queries[q].Text][a] = true
			}
		}
	}
	test := d.Splits["test"]
	p := rerank.Params{MS: 3, MU: 8, TauS: 0.8, TauM: 0.8, N: 2}
	r, err := NewRerank(d, RerankOptions{Retriever: be, Scorer: or, Vectors: "text", Backend: o.Backend, Train: train, Dev: dev, Eval: test,
		Params: p, Mode: rerank.ModeAuto, Norm: rerank.NormMinMax, Grid: rerank.Grid{M: [][2]int{{3, 8}}, TauS: []float32{0.8}, TauM: []float32{0.8}, N: []int{2}, W: []float32{0, 1}}, Depth: 8})
	if err != nil {
		t.Fatal(err)
	}
	qs, err := r.Prepare(test)
	if err != nil {
		t.Fatal(err)
	}
	types := classifier.QueryTypes(d, test)
	for i, q := range qs {
		if len(q.Coarse) != min(50, len(d.Tools)) || q.Multi != types[test.Queries[i]] || len(q.First) != len(d.Tools) {
			t.Fatalf("query %d: %d coarse tools, multi %v (qrels: %v)", i, len(q.Coarse), q.Multi, types[test.Queries[i]])
		}
	}
	pl := r.Pipeline
	pl.Params.W = 1 // the cross-encoder alone: the relevant APIs of the top m first
	rk, err := r.Ranker(pl, "test").RankQueries(context.Background(), []rank.Query{{Index: test.Queries[0]}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pl.RunAll(context.Background(), qs[:1])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rk[0].Tools, want[0][:3]) {
		t.Errorf("ranker %v, pipeline %v", rk[0].Tools, want[0][:3])
	}
	if _, err := r.Ranker(pl, "test").RankQueries(context.Background(), []rank.Query{{Index: dev.Queries[0]}}, 3); err == nil {
		t.Error("a query of another split: no error")
	}
	score := func(ranked, rel []int) float64 {
		if len(ranked) > 0 && len(rel) > 0 && ranked[0] == rel[0] {
			return 1
		}
		return 0
	}
	rows, n, err := r.Ablations(context.Background(), []int{1, 5}, rerank.TuneOptions{Metric: "top", Score: score})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(dev.Queries) || len(rows) != len(Variants)+1 || rows[0].Name != "bi-encoder alone" || rows[len(rows)-1].Name != Variants[len(Variants)-1].Name {
		t.Errorf("%d dev queries, %d rows", n, len(rows))
	}
}
