package toolindex_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/toolindex"
)

// reranked is what a reranker of depth m and weight w (nil: none) makes of first, a query's
// first-stage results (best first): the top m by the cross-encoder's sigmoid score, or by
// w·minmax(it) + (1−w)·minmax(the first stage's score), then the rest in their order.
func reranked(t *testing.T, ce *export.Model, query string, first []toolindex.Result, m int, w *float64) []string {
	t.Helper()
	top := first[:min(m, len(first))]
	score := make([]float64, len(top))
	firstScore := make([]float64, len(top))
	for i, x := range top {
		logits, err := ce.Score([]string{query}, []string{x.Text})
		if err != nil {
			t.Fatal(err)
		}
		score[i], firstScore[i] = float64(export.Sigmoid(logits[0][0])), float64(x.Score)
	}
	if w != nil {
		minmax := func(x []float64) []float64 {
			lo, hi := slices.Min(x), slices.Max(x)
			out := make([]float64, len(x))
			for i, v := range x {
				if hi > lo {
					out[i] = (v - lo) / (hi - lo)
				}
			}
			return out
		}
		a, b := minmax(score), minmax(firstScore)
		for i := range score {
			score[i] = *w*a[i] + (1-*w)*b[i]
		}
	}
	order := make([]int, len(top))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return score[order[a]] > score[order[b]] })
	var out []string
	for _, i := range order {
		out = append(out, top[i].ToolID)
	}
	for _, x := range first[len(top):] {
		out = append(out, x.ToolID)
	}
	return out
}

// TestRerankerRecipe: an index exported from a model whose recipe reranks records the
// reranker, holds its cross-encoder, and Load serves it after the recipe's hybrid fusion and
// clauses: the top m of that first stage (asked for more, the rest in its order) reordered by
// the cross-encoder, interpolated with the first stage's scores at the recipe's weight.
// WithoutRecipe and WithReranker("", 0) leave it out; WithReranker replaces it.
func TestRerankerRecipe(t *testing.T) {
	be, d := exporttest.GoDefault(t)
	m, err := exporttest.BiEncoder(exporttest.Options{}, be, 1)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ceDir := filepath.Join(tmp, "ce")
	if err := exporttest.WriteCrossEncoderHF(ceDir, be, 5); err != nil {
		t.Fatal(err)
	}
	ce, err := export.LoadCrossEncoder(ceDir, be)
	if err != nil {
		t.Fatal(err)
	}
	qs := testQueries(t, d, 6)
	queries := []string{qs[0] + ", and then " + qs[1], qs[2], qs[3] + ". Then " + qs[4], qs[5]}
	w4, w1 := 0.4, 1.0
	ctx := context.Background()
	for _, c := range []struct {
		name string
		r    export.Recipe
	}{
		{"hybrid zscore, w 0.4", export.Recipe{Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.6}, Reranker: &export.RerankerRecipe{Depth: 8, Weight: &w4}}},
		{"hybrid rrf and clauses, the cross-encoder alone", export.Recipe{Hybrid: &export.HybridRecipe{Fusion: "rrf"}, Clauses: &export.ClausesRecipe{}, Reranker: &export.RerankerRecipe{Depth: 8}}},
		{"dense, w 1", export.Recipe{Reranker: &export.RerankerRecipe{Depth: 8, Weight: &w1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := c.r
			rec.Version = export.RecipeVersion
			rr := *rec.Reranker
			rr.Path, rr.Dir = export.RerankerDir, ceDir
			rec.Reranker = &rr
			dir := filepath.Join(t.TempDir(), "index")
			man, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: dir, Recipe: &rec})
			if err != nil {
				t.Fatal(err)
			}
			if man.Reranker == nil || man.Reranker.Path != "reranker" || man.Reranker.Depth != 8 || man.Files["reranker/model.safetensors"] == "" {
				t.Fatalf("manifest reranker %+v, files %d: want the recipe's, its cross-encoder in reranker/", man.Reranker, len(man.Files))
			}
			served, err := toolindex.Load(dir, toolindex.WithBackend(be))
			if err != nil {
				t.Fatal(err)
			}
			gotDir, gotM, gotW := served.Reranker()
			if gotDir != filepath.Join(dir, "reranker") || gotM != 8 || (gotW == nil) != (rr.Weight == nil) || (gotW != nil && math.Abs(*gotW-*rr.Weight) > 1e-6) {
				t.Fatalf("Reranker() = %s, %d, %v: want the recorded one", gotDir, gotM, gotW)
			}
			first, err := toolindex.Load(dir, toolindex.WithBackend(be), toolindex.WithReranker("", 0))
			if err != nil {
				t.Fatal(err)
			}
			if d, _, _ := first.Reranker(); d != "" {
				t.Fatalf(`WithReranker("", 0): reranker %s served`, d)
			}
			if h, _ := first.Hybrid(); (h != "") != (rec.Hybrid != nil) || (first.Clauses() != nil) != (rec.Clauses != nil) {
				t.Fatalf("first stage: hybrid %q, clauses %v: want the recipe's", h, first.Clauses())
			}
			changed := false
			for _, k := range []int{5, 12} {
				got, err := served.RetrieveBatch(ctx, queries, k)
				if err != nil {
					t.Fatal(err)
				}
				base, err := first.RetrieveBatch(ctx, queries, max(k, 8))
				if err != nil {
					t.Fatal(err)
				}
				for i, q := range queries {
					want := reranked(t, ce, q, base[i], 8, rr.Weight)[:k]
					changed = changed || !slices.Equal(want, ids(base[i])[:k])
					if !slices.Equal(ids(got[i]), want) {
						t.Errorf("k %d, query %q: %v, want %v", k, q, ids(got[i]), want)
					}
					for j := 1; j < len(got[i]); j++ {
						if got[i][j].Score > got[i][j-1].Score {
							t.Errorf("k %d, query %q: scores not decreasing at %d: %v > %v", k, q, j, got[i][j].Score, got[i][j-1].Score)
						}
					}
				}
			}
			if !changed {
				t.Error("the reranker reorders no query's tools: the test cannot tell it from the first stage")
			}
			for _, o := range []struct {
				name string
				opt  toolindex.Option
				dir  string
				m    int
			}{
				{"WithoutRecipe", toolindex.WithoutRecipe(), "", 0},
				{"WithReranker", toolindex.WithReranker(ceDir, 3), ceDir, 3},
			} {
				x, err := toolindex.Load(dir, toolindex.WithBackend(be), o.opt)
				if err != nil {
					t.Fatal(err)
				}
				if d, m, w := x.Reranker(); d != o.dir || m != o.m || w != nil {
					t.Errorf("%s: Reranker() = %q, %d, %v; want %q, %d, none", o.name, d, m, w, o.dir, o.m)
				}
			}
		})
	}
}

// TestRerankerRecipeRefusals: a recorded reranker an ensemble cannot serve, or one whose
// cross-encoder is damaged, is refused at Load, naming it.
func TestRerankerRecipeRefusals(t *testing.T) {
	be, _ := exporttest.GoDefault(t)
	m, err := exporttest.BiEncoder(exporttest.Options{}, be, 1)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ceDir, dir, member := filepath.Join(tmp, "ce"), filepath.Join(tmp, "index"), filepath.Join(tmp, "member")
	if err := exporttest.WriteCrossEncoderHF(ceDir, be, 5); err != nil {
		t.Fatal(err)
	}
	rec := &export.Recipe{Version: export.RecipeVersion, Reranker: &export.RerankerRecipe{Path: export.RerankerDir, Depth: 4, Dir: ceDir}}
	if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: dir, Recipe: rec}); err != nil {
		t.Fatal(err)
	}
	if _, err := tinyIndex(member); err != nil {
		t.Fatal(err)
	}
	if _, err := toolindex.Load(dir, toolindex.WithBackend(be), toolindex.WithEnsemble("rrf", []string{member}, nil)); err == nil || !strings.Contains(err.Error(), "records its model's recipe, reranker +rerank 4") {
		t.Errorf("recorded reranker with an ensemble: %v", err)
	}
	if _, err := toolindex.Load(dir, toolindex.WithBackend(be), toolindex.WithEnsemble("rrf", []string{member}, nil), toolindex.WithoutRecipe()); err != nil {
		t.Errorf("ensemble WithoutRecipe: %v", err)
	}
	cfg := filepath.Join(dir, "reranker", "config.json")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := toolindex.Load(dir, toolindex.WithBackend(be)); err == nil || !strings.Contains(err.Error(), cfg) || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("damaged cross-encoder: %v", err)
	}
}
