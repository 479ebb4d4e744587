package toolindex_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/toolindex"
)

// TestEnsembleFusion: an ensemble of two MLC indexes (a softmax and a sigmoid one) and a
// bi-encoder index answers each query with package fusion's fusion of the three indexes' own
// rankings (the MLCs' as probabilities), each cut at max(k, 100), as eval -method fusion fuses
// saved runs, for rrf and interpolation at several weights; and its ranking differs from its
// first index's alone.
func TestEnsembleFusion(t *testing.T) {
	be, d := exporttest.GoDefault(t)
	tmp := t.TempDir()
	_, mlc1, man1 := exportMLC(t, filepath.Join(tmp, "a"), exporttest.ClassifierOptions{Loss: "softmax"}, be, 31)
	_, mlc2, man2 := exportMLC(t, filepath.Join(tmp, "b"), exporttest.ClassifierOptions{Loss: "bce"}, be, 32)
	if man1.MLC.Activation != "softmax" || man2.MLC.Activation != "sigmoid" {
		t.Fatalf("activations %s, %s: the test wants one softmax and one sigmoid MLC", man1.MLC.Activation, man2.MLC.Activation)
	}
	bi := filepath.Join(tmp, "bi")
	if _, err := tinyIndex(bi); err != nil {
		t.Fatal(err)
	}
	queries := testQueries(t, d, 20)
	dirs := []string{mlc1, mlc2, bi}
	// own[i][q]: index i alone, every tool; an MLC's logits turned into the probabilities
	// (softmax over every tool, or sigmoid) that eval's run rankers give and the ensemble fuses.
	var own [][][]toolindex.Result
	for i, dir := range dirs {
		r, err := toolindex.Load(dir, toolindex.WithBackend(be))
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.RetrieveBatch(context.Background(), queries, r.Len())
		if err != nil {
			t.Fatal(err)
		}
		for _, rs := range res {
			switch i {
			case 0:
				lse := 0.0
				for _, x := range rs {
					lse += math.Exp(float64(x.RetrievalScore - rs[0].RetrievalScore))
				}
				lse = float64(rs[0].RetrievalScore) + math.Log(lse)
				for j := range rs {
					rs[j].RetrievalScore = float32(math.Exp(float64(rs[j].RetrievalScore) - lse))
				}
			case 1:
				for j := range rs {
					rs[j].RetrievalScore = export.Sigmoid(rs[j].RetrievalScore)
				}
			}
		}
		own = append(own, res)
	}
	for _, c := range []struct {
		method string
		w      []float64
		k      int
	}{
		{"rrf", nil, 10},
		{"zscore", []float64{0.2, 0.5, 0.3}, 10},
		{"zscore", []float64{1, 1, 1}, 5},
		{"minmax", []float64{0.6, 0, 0.4}, 20},
	} {
		name := fmt.Sprintf("%s %v k%d", c.method, c.w, c.k)
		r, err := toolindex.Load(mlc1, toolindex.WithBackend(be), toolindex.WithEnsemble(c.method, dirs[1:], c.w))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m, mem, w := r.Ensemble(); m != c.method || len(mem) != 2 || len(w) != len(c.w) {
			t.Errorf("%s: Ensemble() = %s %v %v", name, m, mem, w)
		}
		got, err := r.RetrieveBatch(context.Background(), queries, c.k)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m := max(c.k, toolindex.DefaultHybridDepth)
		differs := false
		for q := range queries {
			lists := make([]rank.Ranking, len(own))
			for i := range own {
				for _, x := range own[i][q][:min(m, len(own[i][q]))] {
					lists[i].Tools = append(lists[i].Tools, x.Index)
					lists[i].Scores = append(lists[i].Scores, x.RetrievalScore)
				}
			}
			var want rank.Ranking
			if c.method == "rrf" {
				want, err = fusion.RRF(lists, fusion.DefaultK)
			} else {
				want, err = fusion.Interpolate(lists, c.w, rerank.Norm(c.method))
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got[q]) != c.k {
				t.Fatalf("%s: query %d: %d results, want %d", name, q, len(got[q]), c.k)
			}
			for j, x := range got[q] {
				tl := want.Tools[j]
				if x.Index != tl || x.ToolID != d.Tools[tl].ID || math.Abs(float64(x.Score-want.Scores[j])) > 1e-5 || x.RetrievalScore != x.Score {
					t.Fatalf("%s: query %d result %d: %s (index %d) score %v; want %s score %v", name, q, j, x.ToolID, x.Index, x.Score, d.Tools[tl].ID, want.Scores[j])
				}
				if tl != own[0][q][j].Index {
					differs = true
				}
			}
		}
		if !differs {
			t.Errorf("%s: the ensemble ranks as its first index alone for every query", name)
		}
	}
}

// TestEnsembleLibrary: an ensemble refuses added or changed tools (ErrEnsembleTools), drops a
// deleted tool from every answer while still giving k results, and warms its members up too.
func TestEnsembleLibrary(t *testing.T) {
	be, d := exporttest.GoDefault(t)
	tmp := t.TempDir()
	_, mlc1, _ := exportMLC(t, filepath.Join(tmp, "a"), exporttest.ClassifierOptions{}, be, 31)
	_, mlc2, _ := exportMLC(t, filepath.Join(tmp, "b"), exporttest.ClassifierOptions{}, be, 32)
	bi := filepath.Join(tmp, "bi")
	if _, err := tinyIndex(bi); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, first := range []string{bi, mlc1} {
		r, err := toolindex.Load(first, toolindex.WithBackend(be), toolindex.WithEnsemble("rrf", []string{mlc2}, nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.CanEmbedTools(); !errors.Is(err, toolindex.ErrEnsembleTools) {
			t.Errorf("%s: CanEmbedTools() = %v, want ErrEnsembleTools", filepath.Base(first), err)
		}
		q := testQueries(t, d, 1)
		top, err := r.Retrieve(ctx, q[0], 3)
		if err != nil {
			t.Fatal(err)
		}
		gone := top[0].ToolID
		lib, err := r.Library().With(1, nil, nil, []string{gone})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.SetLibrary(lib); err != nil {
			t.Fatal(err)
		}
		after, err := r.Retrieve(ctx, q[0], 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != 3 {
			t.Fatalf("%d results after a deletion, want 3", len(after))
		}
		for _, x := range after {
			if x.ToolID == gone {
				t.Errorf("%s: deleted tool %s still answered", filepath.Base(first), gone)
			}
		}
		if after[0].ToolID != top[1].ToolID {
			t.Errorf("%s: after deleting the first result the first is %s, want the former second %s", filepath.Base(first), after[0].ToolID, top[1].ToolID)
		}
	}
	alone, err := toolindex.Load(mlc1, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	ens, err := toolindex.Load(mlc1, toolindex.WithBackend(be), toolindex.WithEnsemble("rrf", []string{mlc2}, nil))
	if err != nil {
		t.Fatal(err)
	}
	a, err := alone.Warmup(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ens.Warmup(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if e.Shapes <= a.Shapes {
		t.Errorf("ensemble warm-up ran %d shapes, its first index alone %d: the member was not warmed", e.Shapes, a.Shapes)
	}
}

// TestEnsembleRefusals: bad ensembles fail at Load with an error that names the problem.
func TestEnsembleRefusals(t *testing.T) {
	be, _ := exporttest.GoDefault(t)
	tmp := t.TempDir()
	_, mlc1, _ := exportMLC(t, filepath.Join(tmp, "a"), exporttest.ClassifierOptions{}, be, 31)
	bi := filepath.Join(tmp, "bi")
	if _, err := tinyIndex(bi); err != nil {
		t.Fatal(err)
	}
	// other: the bi-encoder index with one tool's id changed.
	other := filepath.Join(tmp, "other")
	if err := os.CopyFS(other, os.DirFS(bi)); err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(other, "tools.jsonl")
	b, err := os.ReadFile(tools)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	id := jsonField(t, first, "id")
	if err := os.WriteFile(tools, []byte(strings.Replace(string(b), `"id":"`+id+`"`, `"id":"renamed"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts []toolindex.Option
		want string
	}{
		{"no members", []toolindex.Option{toolindex.WithEnsemble("zscore", nil, []float64{1})}, "no members"},
		{"weights count", []toolindex.Option{toolindex.WithEnsemble("zscore", []string{bi}, []float64{1})}, "1 weights for 2 indexes"},
		{"negative weight", []toolindex.Option{toolindex.WithEnsemble("minmax", []string{bi}, []float64{1, -0.5})}, "weight 2 is -0.5"},
		{"zero weights", []toolindex.Option{toolindex.WithEnsemble("zscore", []string{bi}, []float64{0, 0})}, "every weight is 0"},
		{"rrf weights", []toolindex.Option{toolindex.WithEnsemble("rrf", []string{bi}, []float64{0.5, 0.5})}, "rrf has no weights"},
		{"method", []toolindex.Option{toolindex.WithEnsemble("sum", []string{bi}, nil)}, `WithEnsemble("sum")`},
		{"hybrid", []toolindex.Option{toolindex.WithEnsemble("rrf", []string{bi}, nil), toolindex.WithHybrid("rrf", 0)}, "WithEnsemble and WithHybrid"},
		{"reranker", []toolindex.Option{toolindex.WithEnsemble("rrf", []string{bi}, nil), toolindex.WithReranker(bi, 10)}, "WithEnsemble and WithReranker"},
		{"missing member", []toolindex.Option{toolindex.WithEnsemble("rrf", []string{filepath.Join(tmp, "nope")}, nil)}, "ensemble member " + filepath.Join(tmp, "nope")},
		{"other tools", []toolindex.Option{toolindex.WithEnsemble("rrf", []string{other}, nil), toolindex.WithoutVerify()}, `lacks tool "` + id + `"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := toolindex.Load(mlc1, append([]toolindex.Option{toolindex.WithBackend(be)}, c.opts...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Load: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// jsonField returns the string field name of the JSON object line.
func jsonField(t *testing.T, line, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	s, _ := m[name].(string)
	if s == "" {
		t.Fatalf("no string field %q in %s", name, line)
	}
	return s
}
