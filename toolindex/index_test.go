package toolindex_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/toolindex"
)

// tinyIndex exports a tiny random bi-encoder's index of the embedded dataset into dir.
func tinyIndex(dir string) (*export.Model, error) {
	be, err := backend.Open("go")
	if err != nil {
		return nil, err
	}
	m, err := exporttest.BiEncoder(exporttest.Options{}, be, 1)
	if err != nil {
		return nil, err
	}
	_, err = export.Export(m, export.Options{Format: export.FormatIndex, Out: dir})
	return m, err
}

func Example() {
	dir, err := os.MkdirTemp("", "toolret-index-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	// An index is what `toolret export -run RUN -format index` writes; here a tiny random
	// model's index of the embedded dataset.
	if _, err := tinyIndex(filepath.Join(dir, "index")); err != nil {
		fmt.Println(err)
		return
	}
	r, err := toolindex.Load(filepath.Join(dir, "index"))
	if err != nil {
		fmt.Println(err)
		return
	}
	results, err := r.Retrieve(context.Background(), "what is the weather like in Lisbon tomorrow?", 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(results), "results, best first:", results[0].Score >= results[1].Score && results[1].Score >= results[2].Score)
	// Output: 3 results, best first: true
}

func TestRetrieve(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	m, err := tinyIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := toolindex.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := data.Default()
	if r.Len() != len(d.Tools) {
		t.Fatalf("%d tools, want %d", r.Len(), len(d.Tools))
	}
	var queries []string
	for _, q := range d.Queries[:24] {
		queries = append(queries, q.Text)
	}
	// Reference: brute force with the model itself.
	qe, _ := m.Embed(biencoder.QueryTower, queries)
	texts := make([]string, len(d.Tools))
	for i, tl := range d.Tools {
		texts[i] = tl.Text
	}
	te, _ := m.Embed(biencoder.ToolTower, texts)
	const k = 5
	batch, err := r.RetrieveBatch(context.Background(), queries, k)
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range batch {
		if len(res) != k {
			t.Fatalf("query %d: %d results", i, len(res))
		}
		// Brute force: every tool's score, all tools sorted best first (ties to the lower index).
		scores := make([]float32, len(te))
		order := make([]int, len(te))
		for tool, v := range te {
			for j := range qe[i] {
				scores[tool] += qe[i][j] * v[j]
			}
			order[tool] = tool
		}
		sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
		seen := map[int]bool{}
		for j, x := range res {
			s := scores[x.Index]
			if d := s - x.Score; d > 1e-5 || d < -1e-5 || x.ToolID != d2id(x.Index) {
				t.Fatalf("query %d tool %s: score %v, brute force %v", i, x.ToolID, x.Score, s)
			}
			// The j-th result is the brute force's j-th tool, or one tied with it within float
			// error (the index holds the exported, re-read embeddings).
			if want := order[j]; x.Index != want && math.Abs(float64(s-scores[want])) > 1e-5 {
				t.Fatalf("query %d rank %d: tool %d (score %v), brute force ranks tool %d (score %v) there; results %v, brute force top %d %v",
					i, j+1, x.Index, s, want, scores[want], indexes(res), k, order[:k])
			}
			if seen[x.Index] {
				t.Fatalf("query %d: tool %d returned twice", i, x.Index)
			}
			seen[x.Index] = true
		}
		one, err := r.Retrieve(context.Background(), queries[i], 5)
		if err != nil {
			t.Fatal(err)
		}
		for j := range one {
			if one[j].ToolID != res[j].ToolID && one[j].Score != res[j].Score {
				t.Fatalf("query %d: Retrieve %v, RetrieveBatch %v", i, one[j], res[j])
			}
		}
	}
	// Concurrent use gives the same answers.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g % 3; i < len(queries); i += 3 {
				res, err := r.Retrieve(context.Background(), queries[i], 5)
				if err != nil {
					errs <- err
					return
				}
				for j := range res {
					if res[j].Index != batch[i][j].Index {
						errs <- fmt.Errorf("goroutine %d query %d rank %d: tool %s, sequential %s", g, i, j, res[j].ToolID, batch[i][j].ToolID)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Retrieve(ctx, "x", 3); err == nil {
		t.Fatal("cancelled context: no error")
	}
	if _, err := r.Retrieve(context.Background(), "x", 0); err == nil {
		t.Fatal("k = 0: no error")
	}
}

// indexes returns the tool indexes of results.
func indexes(res []toolindex.Result) []int {
	out := make([]int, len(res))
	for i, x := range res {
		out[i] = x.Index
	}
	return out
}

var idOf []string

func d2id(i int) string {
	if idOf == nil {
		d, _ := data.Default()
		for _, t := range d.Tools {
			idOf = append(idOf, t.ID)
		}
	}
	return idOf[i]
}

func TestReranker(t *testing.T) {
	tmp := t.TempDir()
	if _, err := tinyIndex(filepath.Join(tmp, "index")); err != nil {
		t.Fatal(err)
	}
	be, _ := backend.Open("go")
	ce, err := exporttest.BiEncoder(exporttest.Options{Pooling: encoder.PoolPooler}, be, 2)
	if err != nil {
		t.Fatal(err)
	}
	h := ce.Towers[0].Encoder.Hidden()
	rng := rand.New(rand.NewPCG(3, 4))
	head := &export.Head{Labels: []string{"relevant"}, Weight: make([]float32, h), Bias: []float32{0.1}, Pooling: encoder.PoolCLS}
	for i := range head.Weight {
		head.Weight[i] = float32(rng.NormFloat64())
	}
	ce.Kind, ce.Head, ce.EmbedFn, ce.Similarity = export.KindCrossEncoder, head, nil, ""
	ce.Towers[0].Normalize, ce.Towers[0].MaxLen = false, 128
	if _, err := export.Export(ce, export.Options{Format: export.FormatHF, Out: filepath.Join(tmp, "ce")}); err != nil {
		t.Fatal(err)
	}
	r, err := toolindex.Load(filepath.Join(tmp, "index"), toolindex.WithReranker(filepath.Join(tmp, "ce"), 10))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := toolindex.Load(filepath.Join(tmp, "index"))
	q := "convert 100 dollars to euros"
	res, err := r.Retrieve(context.Background(), q, 4)
	if err != nil {
		t.Fatal(err)
	}
	top10, _ := plain.Retrieve(context.Background(), q, 10)
	in10 := map[string]bool{}
	for _, x := range top10 {
		in10[x.ToolID] = true
	}
	for i, x := range res {
		logits, _ := ce.Score([]string{q}, []string{x.Text})
		if want := export.Sigmoid(logits[0][0]); x.Score-want > 1e-6 || want-x.Score > 1e-6 || !in10[x.ToolID] {
			t.Fatalf("rank %d %s: score %v, cross-encoder %v, in top 10 %v", i, x.ToolID, x.Score, want, in10[x.ToolID])
		}
		if i > 0 && res[i-1].Score < x.Score {
			t.Fatalf("not sorted: %v", res)
		}
	}
	// WithInterpolation: w·minmax(sigmoid) + (1−w)·minmax(retrieval score) over the top 10.
	minmax := func(x []float64) []float64 {
		lo, hi := x[0], x[0]
		for _, v := range x {
			lo, hi = min(lo, v), max(hi, v)
		}
		out := make([]float64, len(x))
		for i, v := range x {
			if hi > lo {
				out[i] = (v - lo) / (hi - lo)
			}
		}
		return out
	}
	ceOf, first := make([]float64, len(top10)), make([]float64, len(top10))
	for i, x := range top10 {
		logits, _ := ce.Score([]string{q}, []string{x.Text})
		ceOf[i], first[i] = float64(export.Sigmoid(logits[0][0])), float64(x.Score)
	}
	nc, nf := minmax(ceOf), minmax(first)
	for _, w := range []float64{0, 0.3, 1} {
		ri, err := toolindex.Load(filepath.Join(tmp, "index"), toolindex.WithReranker(filepath.Join(tmp, "ce"), 10), toolindex.WithInterpolation(float32(w)))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{}
		order := make([]int, len(top10))
		for i, x := range top10 {
			want[x.ToolID], order[i] = w*nc[i]+(1-w)*nf[i], i
		}
		sort.SliceStable(order, func(a, b int) bool { return want[top10[order[a]].ToolID] > want[top10[order[b]].ToolID] })
		got, err := ri.Retrieve(context.Background(), q, 4)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range got {
			if x.ToolID != top10[order[i]].ToolID || (w > 0 && math.Abs(float64(x.Score)-want[x.ToolID]) > 1e-6) {
				t.Fatalf("w=%v rank %d: %s score %v, want %s score %v", w, i, x.ToolID, x.Score, top10[order[i]].ToolID, want[top10[order[i]].ToolID])
			}
		}
		if w == 0 && !slices.Equal(indexes(got), indexes(top10[:4])) {
			t.Fatalf("w=0: %v, want the retrieval order %v", indexes(got), indexes(top10[:4]))
		}
	}
	for _, opts := range [][]toolindex.Option{
		{toolindex.WithReranker(filepath.Join(tmp, "ce"), 10), toolindex.WithInterpolation(1.5)},
		{toolindex.WithInterpolation(0.5)},
	} {
		if _, err := toolindex.Load(filepath.Join(tmp, "index"), opts...); err == nil || !strings.Contains(err.Error(), "WithInterpolation") {
			t.Fatalf("bad interpolation: %v", err)
		}
	}
	// A bi-encoder is not a reranker; a damaged index is refused.
	if _, err := toolindex.Load(filepath.Join(tmp, "index"), toolindex.WithReranker(filepath.Join(tmp, "index", "query"), 10)); err == nil || !strings.Contains(err.Error(), "not a cross-encoder") {
		t.Fatalf("bi-encoder as reranker: %v", err)
	}
	f := filepath.Join(tmp, "index", export.IndexTools)
	b, _ := os.ReadFile(f)
	os.WriteFile(f, append(b, '\n'), 0o644)
	if _, err := toolindex.Load(filepath.Join(tmp, "index")); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("damaged index: %v", err)
	}
}
