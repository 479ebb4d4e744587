package toolret

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/rerank"
)

// TestServeRecipe: serving a library with a pre-trained model whose recipe fuses with BM25
// sets Hybrid and HybridWeight from it, unless Hybrid or NoRecipe is given; with a Reranker
// it is refused, and a corrupt recipe is an error naming the file.
func TestServeRecipe(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	model, plain, bad, clauses := filepath.Join(dir, "model"), filepath.Join(dir, "plain"), filepath.Join(dir, "bad"), filepath.Join(dir, "clauses")
	for _, m := range []string{model, plain, bad, clauses} {
		if err := exporttest.WriteHF(m, exporttest.Options{}, be, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := export.WriteRecipe(model, &export.Recipe{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.3}}); err != nil {
		t.Fatal(err)
	}
	if err := export.WriteRecipe(clauses, &export.Recipe{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.7}, Clauses: &export.ClausesRecipe{Merge: "mix"}}); err != nil {
		t.Fatal(err)
	}
	mine := &rerank.ClauseOptions{Merge: rerank.MergeRRF}
	badFile := filepath.Join(bad, export.RecipeFile)
	if err := os.WriteFile(badFile, []byte(`{"version": 1, "hybrid": {"fusion": "sum"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "lib.jsonl")
	for _, c := range []struct {
		name    string
		cfg     ServeConfig
		hybrid  string
		w       float64
		wantErr string
		clauses string // the Clauses served, "" for none
	}{
		{"recipe", ServeConfig{Library: lib, Pretrained: model, HybridWeight: 0.5}, "zscore", 0.3, "", ""},
		{"explicit -hybrid", ServeConfig{Library: lib, Pretrained: model, Hybrid: "minmax", HybridWeight: 0.9}, "minmax", 0.9, "", ""},
		{"NoRecipe", ServeConfig{Library: lib, Pretrained: model, NoRecipe: true, HybridWeight: 0.5}, "", 0.5, "", ""},
		{"no recipe", ServeConfig{Library: lib, Pretrained: plain, HybridWeight: 0.5}, "", 0.5, "", ""},
		{"index given", ServeConfig{Library: lib, Index: filepath.Join(dir, "index"), Pretrained: model, HybridWeight: 0.5}, "", 0.5, "", ""},
		{"reranker", ServeConfig{Library: lib, Pretrained: model, Reranker: "ce"}, "", 0, "-no-recipe", ""},
		{"corrupt", ServeConfig{Library: lib, Pretrained: bad}, "", 0, badFile, ""},
		{"recipe with clauses", ServeConfig{Library: lib, Pretrained: clauses, HybridWeight: 0.5}, "zscore", 0.7, "", "clauses mix zscore whole 0.5"},
		{"clauses, explicit -hybrid", ServeConfig{Library: lib, Pretrained: clauses, Hybrid: "rrf"}, "rrf", 0, "", "clauses mix zscore whole 0.5"},
		{"explicit clauses", ServeConfig{Library: lib, Pretrained: clauses, Clauses: mine, HybridWeight: 0.5}, "zscore", 0.7, "", "clauses rrf whole 0.5"},
		{"clauses, NoRecipe", ServeConfig{Library: lib, Pretrained: clauses, NoRecipe: true}, "", 0, "", ""},
	} {
		cfg := c.cfg
		err := applyRecipe(context.Background(), &cfg)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if cfg.Hybrid != c.hybrid || cfg.HybridWeight != c.w {
			t.Errorf("%s: hybrid %q %g, want %q %g", c.name, cfg.Hybrid, cfg.HybridWeight, c.hybrid, c.w)
		}
		got := ""
		if cfg.Clauses != nil {
			got = cfg.Clauses.String()
		}
		if got != c.clauses {
			t.Errorf("%s: clauses %q, want %q", c.name, got, c.clauses)
		}
	}
}
