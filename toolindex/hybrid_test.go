package toolindex_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rank/bm25"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/toolindex"
)

// denseScores returns every tool's first-stage score of each query, from r (not hybrid), in
// library order.
func denseScores(t *testing.T, r *toolindex.Index, queries []string) [][]float32 {
	t.Helper()
	n := r.Len()
	res, err := r.RetrieveBatch(context.Background(), queries, n)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(res))
	for i, rs := range res {
		out[i] = make([]float32, n)
		for _, x := range rs {
			out[i][x.Index] = x.RetrievalScore
		}
	}
	return out
}

// TestHybridFusion: a hybrid retriever's results, over a bi-encoder index and an MLC index,
// are package fusion's fusion of the index's dense ranking and bm25's ranking of the tool
// texts (each cut at m), for rrf and interpolation at several weights and depths, with both
// sides' scores carried; and they differ from the dense ranking alone.
func TestHybridFusion(t *testing.T) {
	be, d := exporttest.GoDefault(t)
	tmp := t.TempDir()
	bi := filepath.Join(tmp, "bi")
	if _, err := tinyIndex(bi); err != nil {
		t.Fatal(err)
	}
	_, mlc, _ := exportMLC(t, filepath.Join(tmp, "mlc"), exporttest.ClassifierOptions{}, be, 31)
	queries := testQueries(t, d, 20)
	docs := make([]string, len(d.Tools))
	for i, tl := range d.Tools {
		docs[i] = tl.Text
	}
	ix := bm25.New(docs, bm25.DefaultParams)
	ctx := context.Background()
	for _, index := range []string{bi, mlc} {
		plain, err := toolindex.Load(index, toolindex.WithBackend(be))
		if err != nil {
			t.Fatal(err)
		}
		dense := denseScores(t, plain, queries)
		for _, c := range []struct {
			method   string
			w        float64
			depth, k int
			adapt    *fusion.Adaptive // WithHybridAdaptive; w is then its base
		}{
			{"rrf", 0, 0, 10, nil},
			{"rrf", 0, 7, 5, nil},
			{"minmax", 0.3, 0, 10, nil},
			{"minmax", 0.7, 20, 20, nil},
			{"zscore", 0.5, 0, 10, nil},
			{"zscore", 0.2, 3, 8, nil}, // depth below k: k is the depth
			{"zscore", 0.9, 0, 10, &fusion.Adaptive{Base: 0.9, Slope: -0.2}},
			{"minmax", 0.6, 20, 10, &fusion.Adaptive{Base: 0.6, Slope: 0.1}},
		} {
			name := fmt.Sprintf("%s/%s w%g m%d k%d adaptive %v", filepath.Base(index), c.method, c.w, c.depth, c.k, c.adapt)
			opts := []toolindex.Option{toolindex.WithBackend(be), toolindex.WithHybrid(c.method, c.w)}
			if c.adapt != nil {
				opts[1] = toolindex.WithHybridAdaptive(c.method, *c.adapt)
			}
			if c.depth > 0 {
				opts = append(opts, toolindex.WithHybridDepth(c.depth))
			}
			r, err := toolindex.Load(index, opts...)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if m, w := r.Hybrid(); m != c.method || w != c.w {
				t.Errorf("%s: Hybrid() = %s, %g", name, m, w)
			}
			if a := r.HybridAdaptive(); (a == nil) != (c.adapt == nil) || (a != nil && *a != *c.adapt) {
				t.Errorf("%s: HybridAdaptive() = %v", name, a)
			}
			got, err := r.RetrieveBatch(ctx, queries, c.k)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			m := c.depth
			if m == 0 {
				m = toolindex.DefaultHybridDepth
			}
			m = max(m, c.k)
			differs := false
			for i, q := range queries {
				lex := ix.Scores(q)
				lists := []rank.Ranking{rank.TopK(dense[i], m), rank.TopK(lex, m)}
				var want rank.Ranking
				switch {
				case c.method == "rrf":
					want, err = fusion.RRF(lists, fusion.DefaultK)
				case c.adapt != nil:
					want, err = fusion.InterpolateAdaptive(lists[0], lists[1], *c.adapt, rerank.Norm(c.method))
				default:
					want, err = fusion.Interpolate(lists, []float64{c.w, 1 - c.w}, rerank.Norm(c.method))
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(got[i]) != c.k {
					t.Fatalf("%s: query %d: %d results, want %d", name, i, len(got[i]), c.k)
				}
				for j, x := range got[i] {
					tl := want.Tools[j]
					if x.Index != tl || x.ToolID != d.Tools[tl].ID || x.Score != want.Scores[j] || x.RetrievalScore != x.Score ||
						x.DenseScore != dense[i][tl] || x.BM25Score != lex[tl] {
						t.Fatalf("%s: query %d result %d: %s (index %d) score %v retrieval %v dense %v bm25 %v; want %s score %v dense %v bm25 %v",
							name, i, j, x.ToolID, x.Index, x.Score, x.RetrievalScore, x.DenseScore, x.BM25Score, d.Tools[tl].ID, want.Scores[j], dense[i][tl], lex[tl])
					}
					if tl != lists[0].Tools[j] {
						differs = true
					}
				}
			}
			if !differs {
				t.Errorf("%s: the hybrid ranking is the dense ranking for every query", name)
			}
		}
	}
}

// TestHybridRRFByHand: four tools whose dense and BM25 orders are known by construction; the
// RRF scores are 1/(60+dense rank) + 1/(60+bm25 rank).
func TestHybridRRFByHand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := tinyIndex(dir); err != nil {
		t.Fatal(err)
	}
	r, err := toolindex.Load(dir, toolindex.WithHybrid("rrf", 0))
	if err != nil {
		t.Fatal(err)
	}
	q := "alpha beta"
	qe, err := r.Embed(biencoder.QueryTower, []string{q})
	if err != nil {
		t.Fatal(err)
	}
	// Dense: tool i's row is c[i]·q, its score c[i]·|q|²: ranks t0 1, t1 2, t2 3, t3 4.
	// BM25 of "alpha beta": t2 has both terms, t3 one in a 1-word text, t1 one in a 3-word
	// text, t0 none: ranks t2 1, t3 2, t1 3, t0 4.
	texts := []string{"gamma", "alpha gamma delta", "alpha beta", "beta"}
	c := []float32{4, 3, 2, 1}
	var recs []export.ToolRecord
	var rows [][]float32
	for i, tx := range texts {
		recs = append(recs, export.ToolRecord{ID: fmt.Sprintf("t%d", i), Text: tx})
		row := make([]float32, len(qe[0]))
		for j, v := range qe[0] {
			row[j] = c[i] * v
		}
		rows = append(rows, row)
	}
	lib, err := toolindex.NewLibrary(1, recs, rows)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.RetrieveFrom(context.Background(), lib, []string{q}, 4)
	if err != nil {
		t.Fatal(err)
	}
	rrf := func(a, b int) float32 { return float32(1/float64(60+a) + 1/float64(60+b)) }
	want := []struct {
		id    string
		score float32
	}{{"t2", rrf(3, 1)}, {"t0", rrf(1, 4)}, {"t1", rrf(2, 3)}, {"t3", rrf(4, 2)}}
	if len(res[0]) != len(want) {
		t.Fatalf("%d results, want %d", len(res[0]), len(want))
	}
	for i, w := range want {
		x := res[0][i]
		if x.ToolID != w.id || math.Abs(float64(x.Score-w.score)) > 1e-7 {
			t.Errorf("result %d: %s %v, want %s %v", i, x.ToolID, x.Score, w.id, w.score)
		}
	}
	if res[0][0].BM25Score <= res[0][2].BM25Score || res[0][1].BM25Score != 0 || res[0][1].DenseScore <= res[0][0].DenseScore {
		t.Errorf("side scores: %+v", res[0])
	}
}

// TestHybridWeightEnds: interpolation with dense weight 1 ranks as the dense first stage, with
// weight 0 as BM25 (compared where BM25's top k have positive, distinct scores).
func TestHybridWeightEnds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := tinyIndex(dir); err != nil {
		t.Fatal(err)
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	queries := testQueries(t, d, 40)
	docs := make([]string, len(d.Tools))
	for i, tl := range d.Tools {
		docs[i] = tl.Text
	}
	ix := bm25.New(docs, bm25.DefaultParams)
	plain, err := toolindex.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	const k = 5
	dense, err := plain.RetrieveBatch(context.Background(), queries, k)
	if err != nil {
		t.Fatal(err)
	}
	for _, norm := range []string{"minmax", "zscore"} {
		for _, w := range []float64{1, 0} {
			r, err := toolindex.Load(dir, toolindex.WithHybrid(norm, w))
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.RetrieveBatch(context.Background(), queries, k)
			if err != nil {
				t.Fatal(err)
			}
			compared := 0
			for i, q := range queries {
				var want []int
				if w == 1 {
					want = indexes(dense[i])
				} else {
					top := rank.TopK(ix.Scores(q), k+1)
					ok := top.Scores[k-1] > 0 && top.Scores[k-1] > top.Scores[k]
					for j := 1; j < k; j++ {
						ok = ok && top.Scores[j] < top.Scores[j-1]
					}
					if !ok {
						continue
					}
					want = top.Tools[:k]
				}
				compared++
				if g := indexes(got[i]); !slices.Equal(g, want) {
					t.Errorf("%s w %g: query %q: %v, want %v", norm, w, q, g, want)
				}
			}
			if compared < 10 {
				t.Errorf("%s w %g: only %d queries compared", norm, w, compared)
			}
		}
	}
}

// TestHybridLibrary: a tool added to the library is found through its text (BM25) once the
// library is set, not before; a library passed to RetrieveFrom is ranked with its own BM25
// index, and a removed tool is gone from both sides.
func TestHybridLibrary(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := tinyIndex(dir); err != nil {
		t.Fatal(err)
	}
	r, err := toolindex.Load(dir, toolindex.WithHybrid("minmax", 0.3))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	text := "frobnicate the quantum teapot"
	q := "quantum teapot frobnication"
	emb, err := r.Embed(biencoder.ToolTower, []string{text})
	if err != nil {
		t.Fatal(err)
	}
	old := r.Library()
	gone := old.Tool(0).ID
	next, err := old.With(old.Version+1, []export.ToolRecord{{ID: "teapot", Text: text}}, emb, []string{gone})
	if err != nil {
		t.Fatal(err)
	}
	has := func(rs []toolindex.Result, id string) bool {
		return slices.ContainsFunc(rs, func(x toolindex.Result) bool { return x.ToolID == id })
	}
	before, err := r.Retrieve(ctx, q, 5)
	if err != nil {
		t.Fatal(err)
	}
	if has(before, "teapot") {
		t.Fatal("the new tool found before SetLibrary")
	}
	// Only the new tool's text has "quantum" and "teapot": BM25 1 after normalisation, every
	// other tool 0, so 0.7 + 0.3·dense ranks it first.
	if err := r.SetLibrary(next); err != nil {
		t.Fatal(err)
	}
	after, err := r.Retrieve(ctx, q, 5)
	if err != nil {
		t.Fatal(err)
	}
	if after[0].ToolID != "teapot" || after[0].BM25Score <= 0 || after[1].BM25Score != 0 {
		t.Fatalf("after SetLibrary: %+v", after)
	}
	all, err := r.Retrieve(ctx, old.Tool(0).Text, next.Len())
	if err != nil {
		t.Fatal(err)
	}
	if has(all, gone) || len(all) != next.Len() {
		t.Errorf("the deleted tool %s is still retrieved (%d results)", gone, len(all))
	}
	// The old version answers from its own tools and BM25 index.
	res, err := r.RetrieveFrom(ctx, old, []string{q}, 5)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res[0] {
		if res[0][i].ToolID != before[i].ToolID || res[0][i].Score != before[i].Score {
			t.Fatalf("RetrieveFrom the old library: %v, before %v", ids(res[0]), ids(before))
		}
	}
	// A library never set is indexed on first use.
	other, err := old.With(old.Version+2, []export.ToolRecord{{ID: "teapot2", Text: text}}, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err = r.RetrieveFrom(ctx, other, []string{q}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if res[0][0].ToolID != "teapot2" {
		t.Fatalf("RetrieveFrom a library not set: %v", ids(res[0]))
	}
}

// TestHybridRefusals: bad methods, weights and depths, and a hybrid first stage with a
// refiner, are refused with errors naming the problem; WithoutRefiner serves
// an index's packaged refiner's first stage hybrid.
func TestHybridRefusals(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "index")
	if _, err := tinyIndex(dir); err != nil {
		t.Fatal(err)
	}
	run, refRun, refIndex := filepath.Join(tmp, "be"), filepath.Join(tmp, "ref"), filepath.Join(tmp, "ref-index")
	if err := exporttest.WriteRecordedRun(run, exporttest.Options{}, be, 3); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteRefinerRun(refRun, run, exporttest.RefinerOptions{}, be, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := exporttest.IndexRun(run, refIndex, refRun, be); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		index string
		opts  []toolindex.Option
		want  string
	}{
		{"unknown method", dir, []toolindex.Option{toolindex.WithHybrid("sum", 0.5)}, `WithHybrid("sum"): want rrf, minmax or zscore`},
		{"weight above 1", dir, []toolindex.Option{toolindex.WithHybrid("minmax", 1.5)}, "the dense weight must be in [0, 1]"},
		{"negative weight", dir, []toolindex.Option{toolindex.WithHybrid("zscore", -0.1)}, "the dense weight must be in [0, 1]"},
		{"NaN weight", dir, []toolindex.Option{toolindex.WithHybrid("minmax", math.NaN())}, "the dense weight must be in [0, 1]"},
		{"rrf weight", dir, []toolindex.Option{toolindex.WithHybrid("rrf", 0.5)}, "rrf has no weight"},
		{"negative depth", dir, []toolindex.Option{toolindex.WithHybrid("rrf", 0), toolindex.WithHybridDepth(-1)}, "WithHybridDepth(-1): want >= 0"},
		{"depth alone", dir, []toolindex.Option{toolindex.WithHybridDepth(50)}, "WithHybridDepth(50) needs WithHybrid"},
		{"packaged refiner", refIndex, []toolindex.Option{toolindex.WithHybrid("rrf", 0)}, "give WithoutRefiner"},
		{"refiner run", filepath.Join(tmp, "plain"), []toolindex.Option{toolindex.WithHybrid("minmax", 0.5), toolindex.WithRefiner(refRun)}, "give WithoutRefiner"},
	} {
		index := c.index
		if index == filepath.Join(tmp, "plain") {
			if _, err := os.Stat(index); err != nil {
				if _, err := exporttest.IndexRun(run, index, "", be); err != nil {
					t.Fatal(err)
				}
			}
		}
		_, err := toolindex.Load(index, append([]toolindex.Option{toolindex.WithBackend(be)}, c.opts...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	r, err := toolindex.Load(refIndex, toolindex.WithBackend(be), toolindex.WithHybrid("rrf", 0), toolindex.WithoutRefiner())
	if err != nil {
		t.Fatalf("hybrid without the packaged refiner: %v", err)
	}
	if dir, _, _ := r.Refiner(); dir != "" {
		t.Errorf("refiner %s served", dir)
	}
}

// TestHybridBuildTime logs the time to build the BM25 side at load: over ToolLens's tools
// (when ../shared has it) and over a synthetic 100k-tool library of ToolLens-like texts. It
// fails above 10 s for 100k tools.
func TestHybridBuildTime(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100k-tool BM25 index")
	}
	texts := []string{}
	if d, err := data.Load(filepath.Join("..", "..", "shared", "datasets", "toollens")); err == nil {
		for _, tl := range d.Tools {
			texts = append(texts, tl.Text)
		}
		start := time.Now()
		bm25.New(texts, bm25.DefaultParams)
		t.Logf("ToolLens: BM25 over %d tools built in %v", len(texts), time.Since(start))
	} else {
		d, _ := data.Default()
		for _, tl := range d.Tools {
			texts = append(texts, tl.Text)
		}
		t.Logf("ToolLens not found (%v): synthetic texts from the embedded dataset", err)
	}
	// Synthetic: each tool's text is a real text with its words rotated and a unique token.
	const n = 100_000
	syn := make([]string, n)
	for i := range syn {
		w := strings.Fields(texts[i%len(texts)])
		r := i / len(texts) % max(1, len(w))
		syn[i] = strings.Join(append(append(w[r:len(w):len(w)], w[:r]...), fmt.Sprintf("tool%d", i)), " ")
	}
	start := time.Now()
	bm25.New(syn, bm25.DefaultParams)
	took := time.Since(start)
	t.Logf("synthetic: BM25 over %d tools built in %v", n, took)
	if took > 10*time.Second {
		t.Errorf("BM25 over %d tools took %v", n, took)
	}
}
