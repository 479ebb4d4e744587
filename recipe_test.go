package toolret_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/metrics"
)

// recipeModel writes a tiny pre-trained stand-in at dir and, when h is not nil, its recipe.
func recipeModel(t *testing.T, dir string, h *export.HybridRecipe) {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteHF(dir, exporttest.Options{}, be, 1); err != nil {
		t.Fatal(err)
	}
	if h != nil {
		if err := export.WriteRecipe(dir, &export.Recipe{Version: export.RecipeVersion, Hybrid: h, SelectedOn: "test"}); err != nil {
			t.Fatal(err)
		}
	}
}

// sameMetrics fails unless a and b have the same overall figures.
func sameMetrics(t *testing.T, name string, a, b metrics.Report) {
	t.Helper()
	for _, k := range a.Overall.Ks {
		if a.Overall.Recall[k] != b.Overall.Recall[k] || a.Overall.NDCG[k] != b.Overall.NDCG[k] {
			t.Errorf("%s: R@%d %.4f vs %.4f, N@%d %.4f vs %.4f", name, k, a.Overall.Recall[k], b.Overall.Recall[k], k, a.Overall.NDCG[k], b.Overall.NDCG[k])
		}
	}
}

// TestEvaluateRecipe: Evaluate of a model directory with a recipe ranks as the explicit Fuse
// of the model with BM25 at the recipe's weight; with NoRecipe as the model alone; an index
// exported from it records the fusion and ranks the same (NoRecipe: dense); a corrupt recipe
// is one error naming the file, and its export writes nothing.
func TestEvaluateRecipe(t *testing.T) {
	ctx := context.Background()
	dir := tinySuite(t)
	set := filepath.Join(dir, "bfcl")
	plain, withRecipe := filepath.Join(dir, "plain"), filepath.Join(dir, "recipe")
	recipeModel(t, plain, nil)
	for _, c := range []struct {
		name string
		h    *export.HybridRecipe
		fuse toolret.EvalConfig
	}{
		{"zscore 0.3", &export.HybridRecipe{Fusion: "zscore", Weight: 0.3}, toolret.EvalConfig{Fusion: "zscore", FusionWeights: []float64{0.3, 0.7}}},
		{"minmax 0.8", &export.HybridRecipe{Fusion: "minmax", Weight: 0.8}, toolret.EvalConfig{Fusion: "minmax", FusionWeights: []float64{0.8, 0.2}}},
		{"rrf", &export.HybridRecipe{Fusion: "rrf"}, toolret.EvalConfig{Fusion: "rrf"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			model := filepath.Join(withRecipe, strings.ReplaceAll(c.name, " ", "_"))
			recipeModel(t, model, c.h)
			eval := func(cfg toolret.EvalConfig) metrics.Report {
				t.Helper()
				cfg.Data, cfg.Backend = set, "go"
				rep, err := toolret.Evaluate(ctx, cfg)
				if err != nil {
					t.Fatalf("%+v: %v", cfg, err)
				}
				return rep
			}
			fuse := c.fuse
			fuse.Fuse = []string{"model:" + model, "bm25"}
			fused := eval(fuse)
			sameMetrics(t, "recipe vs Fuse", eval(toolret.EvalConfig{Model: model}), fused)
			dense := eval(toolret.EvalConfig{Model: plain})
			sameMetrics(t, "NoRecipe vs the model alone", eval(toolret.EvalConfig{Model: model, NoRecipe: true}), dense)
			if fused.Overall.NDCG[10] == dense.Overall.NDCG[10] {
				t.Errorf("N@10 %.4f with and without the recipe: the test cannot tell them apart", dense.Overall.NDCG[10])
			}

			index := filepath.Join(t.TempDir(), "index")
			man, err := toolret.Export(ctx, toolret.ExportConfig{Model: model, Format: export.FormatIndex, Out: index, Data: set})
			if err != nil {
				t.Fatal(err)
			}
			if *man.Hybrid != *c.h {
				t.Errorf("index manifest hybrid %+v, want %+v", man.Hybrid, c.h)
			}
			sameMetrics(t, "index from the recipe model vs Fuse", eval(toolret.EvalConfig{Index: index}), fused)
			sameMetrics(t, "index NoRecipe vs the model alone", eval(toolret.EvalConfig{Index: index, NoRecipe: true}), dense)
		})
	}

	// A recipe's clauses are applied (as Clauses given) and named in the method.
	clauses := filepath.Join(withRecipe, "clauses")
	recipeModel(t, clauses, nil)
	if err := export.WriteRecipe(clauses, &export.Recipe{Version: export.RecipeVersion, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.7}, Clauses: &export.ClausesRecipe{}}); err != nil {
		t.Fatal(err)
	}
	ev, err := toolret.NewEvaluation(ctx, toolret.EvalConfig{Data: set, Backend: "go", Model: clauses})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	if want := "clauses max zscore (the model's recipe)"; !strings.Contains(ev.Method, want) {
		t.Errorf("method %q does not name the recipe's clauses %q", ev.Method, want)
	}

	bad := filepath.Join(dir, "bad")
	recipeModel(t, bad, nil)
	p := filepath.Join(bad, export.RecipeFile)
	if err := os.WriteFile(p, []byte(`{"version": 1, "hybrid": {"fusion": "zscore", "weight": 2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := toolret.Evaluate(ctx, toolret.EvalConfig{Data: set, Model: bad}); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "hybrid.weight 2") {
		t.Errorf("Evaluate of a corrupt recipe: %v", err)
	}
	out := filepath.Join(dir, "out", "index")
	if _, err := toolret.Export(ctx, toolret.ExportConfig{Model: bad, Format: export.FormatIndex, Out: out, Data: set}); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("Export of a corrupt recipe: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("refused export left %s: %v", filepath.Join(dir, "out"), err)
	}
	if _, err := toolret.Evaluate(ctx, toolret.EvalConfig{Data: set, NoRecipe: true}); err == nil || !strings.Contains(err.Error(), "NoRecipe applies") {
		t.Errorf("NoRecipe with BM25: %v", err)
	}
}

// TestSuiteRecipe: a suite names a model whose recipe it applies with the fusion, and
// NoRecipe evaluates it (under its plain name) as the model alone.
func TestSuiteRecipe(t *testing.T) {
	ctx := context.Background()
	dir := tinySuite(t)
	model := filepath.Join(dir, "model")
	recipeModel(t, model, &export.HybridRecipe{Fusion: "zscore", Weight: 0.3})
	for _, c := range []struct {
		noRecipe bool
		name     string
	}{
		{false, "model:" + model + " (+bm25 zscore 0.3)"},
		{true, "model:" + model},
	} {
		res, err := toolret.Suite(ctx, toolret.SuiteConfig{Dir: dir, Sets: []string{"bfcl"}, Backend: "go", NoRecipe: c.noRecipe,
			Systems: []toolret.SuiteSystem{{Model: model}}})
		if err != nil {
			t.Fatal(err)
		}
		got := res.Systems[len(res.Systems)-1]
		if got.Name != c.name {
			t.Errorf("NoRecipe %v: name %q, want %q", c.noRecipe, got.Name, c.name)
		}
		rep, err := toolret.Evaluate(ctx, toolret.EvalConfig{Data: filepath.Join(dir, "bfcl"), Model: model, NoRecipe: c.noRecipe, Backend: "go", Cutoffs: []int{1, 5, 10}})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{1, 5, 10} {
			if a, b := got.Rows[0].Result.Recall[k], rep.Overall.Recall[k]; a != b {
				t.Errorf("NoRecipe %v: suite R@%d %.4f, Evaluate %.4f", c.noRecipe, k, a, b)
			}
		}
	}
}
