package export_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
)

// TestRecipeRoundTrip: a recipe written with WriteRecipe reads back equal; none reads as nil.
func TestRecipeRoundTrip(t *testing.T) {
	for _, r := range []*export.Recipe{
		{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.3}, SelectedOn: "toolmix dev, pooled"},
		{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "minmax", Weight: 1}},
		{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "rrf"}},
		{Version: 1, SelectedOn: "no fusion won on dev"},
		{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.7}, Clauses: &export.ClausesRecipe{}},
		{Version: 1, Clauses: &export.ClausesRecipe{Merge: "mix", Norm: "minmax", Whole: 0.6, MinWords: 4, Depth: 50}},
	} {
		dir := t.TempDir()
		if got, err := export.ReadRecipe(dir); got != nil || err != nil {
			t.Fatalf("no recipe: %+v, %v", got, err)
		}
		if err := export.WriteRecipe(dir, r); err != nil {
			t.Fatal(err)
		}
		got, err := export.ReadRecipe(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("read %+v, wrote %+v", got, r)
		}
	}
}

// TestRecipeCorrupt: a recipe that does not parse or validate is refused with an error naming
// the file and the field (or the line and column); WriteRecipe refuses it and writes nothing.
func TestRecipeCorrupt(t *testing.T) {
	for _, c := range []struct {
		name, content string
		want          []string
	}{
		{"bad JSON", "{\n  \"version\": 1,\n  \"hybrid\": {\"fusion\": \"zscore\",}\n}\n", []string{"line 3, column 33", "invalid character"}},
		{"truncated", "{\"version\": 1, \"hybrid\": {", []string{"line 1", "unexpected EOF"}},
		{"empty", "", []string{"empty file"}},
		{"unknown fusion", `{"version": 1, "hybrid": {"fusion": "sum", "weight": 0.5}}`, []string{`hybrid.fusion "sum"`, "rrf, minmax or zscore"}},
		{"weight 2", `{"version": 1, "hybrid": {"fusion": "zscore", "weight": 2}}`, []string{"hybrid.weight 2", "[0, 1]"}},
		{"negative weight", `{"version": 1, "hybrid": {"fusion": "minmax", "weight": -0.1}}`, []string{"hybrid.weight -0.1"}},
		{"rrf weight", `{"version": 1, "hybrid": {"fusion": "rrf", "weight": 0.5}}`, []string{"rrf has no weight"}},
		{"weight a string", `{"version": 1, "hybrid": {"fusion": "zscore", "weight": "0.3"}}`, []string{"line 1", "hybrid.weight"}},
		{"unknown version", `{"version": 7}`, []string{"version 7", "version 1"}},
		{"no version", `{"hybrid": {"fusion": "zscore", "weight": 0.3}}`, []string{"version 0"}},
		{"unknown field", `{"version": 1, "hybird": {}}`, []string{`unknown field "hybird"`}},
		{"reranker", `{"version": 1, "reranker": {"path": "reranker", "depth": 20}}`, []string{"reranker", "not supported yet"}},
		{"clauses merge", `{"version": 1, "clauses": {"merge": "best"}}`, []string{"clauses", `merge "best"`, "max, mix or rrf"}},
		{"clauses whole", `{"version": 1, "clauses": {"merge": "mix", "whole": 1.5}}`, []string{"clauses", "whole-query weight 1.5"}},
		{"clauses field", `{"version": 1, "clauses": {"merge": "max", "words": 3}}`, []string{`unknown field "words"`}},
		{"trailing", `{"version": 1} {}`, []string{"after the JSON object"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, export.RecipeFile)
			if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := export.ReadRecipe(dir)
			if err == nil {
				t.Fatal("read, want an error")
			}
			for _, w := range append(c.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want %q in it", err, w)
				}
			}
			if r, perr := export.ParseRecipe([]byte(c.content)); perr == nil {
				out := t.TempDir()
				if err := export.WriteRecipe(out, r); err == nil {
					t.Errorf("WriteRecipe of %+v: no error", r)
				}
			}
		})
	}
	out := t.TempDir()
	if err := export.WriteRecipe(out, &export.Recipe{Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 2}}); err == nil || !strings.Contains(err.Error(), export.RecipeFile) {
		t.Errorf("WriteRecipe weight 2: %v", err)
	}
	if ents, _ := os.ReadDir(out); len(ents) > 0 {
		t.Errorf("WriteRecipe refused, yet wrote %v", ents)
	}
}

// TestExportRecipe: an hf export carries the recipe it is given (and a model's own on
// re-export), an index exported from it records its hybrid, NoRecipe drops it, and a model
// directory with a corrupt recipe is refused by LoadHF and Export with nothing written.
func TestExportRecipe(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	m, err := exporttest.BiEncoder(exporttest.Options{}, be, 1)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "model")
	r := &export.Recipe{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.3}, SelectedOn: "dev"}
	man, err := export.Export(m, export.Options{Format: export.FormatHF, Out: dir, Recipe: r})
	if err != nil {
		t.Fatal(err)
	}
	if man.Files[export.RecipeFile] == "" {
		t.Errorf("manifest files %v: no %s", man.Files, export.RecipeFile)
	}
	loaded, err := export.LoadHF(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(loaded.Recipe, r) {
		t.Fatalf("LoadHF recipe %+v, want %+v", loaded.Recipe, r)
	}
	cases := []struct {
		name   string
		opts   export.Options
		hybrid *export.HybridRecipe
	}{
		{"hf again", export.Options{Format: export.FormatHF}, r.Hybrid},
		{"index", export.Options{Format: export.FormatIndex}, r.Hybrid},
		{"index, replaced", export.Options{Format: export.FormatIndex, Recipe: &export.Recipe{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "rrf"}}}, &export.HybridRecipe{Fusion: "rrf"}},
		{"index, NoRecipe", export.Options{Format: export.FormatIndex, NoRecipe: true}, nil},
		{"hf, NoRecipe", export.Options{Format: export.FormatHF, NoRecipe: true}, nil},
	}
	for i, c := range cases {
		c.opts.Out = filepath.Join(tmp, "out", string(rune('a'+i)))
		man, err := export.Export(loaded, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got *export.HybridRecipe
		if c.opts.Format == export.FormatIndex {
			got = man.Hybrid
		} else if rr, err := export.ReadRecipe(c.opts.Out); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		} else if rr != nil {
			got = rr.Hybrid
		}
		if !reflect.DeepEqual(got, c.hybrid) {
			t.Errorf("%s: hybrid %+v, want %+v", c.name, got, c.hybrid)
		}
	}

	p := filepath.Join(dir, export.RecipeFile)
	if err := os.WriteFile(p, []byte(`{"version": 1, "hybrid": {"fusion": "zscore", "weight": 2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := export.LoadHF(dir, be); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "hybrid.weight 2") {
		t.Errorf("LoadHF of a corrupt recipe: %v", err)
	}
	loaded.Recipe = &export.Recipe{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "sum"}}
	out := filepath.Join(tmp, "refused", "index")
	if _, err := export.Export(loaded, export.Options{Format: export.FormatIndex, Out: out}); err == nil || !strings.Contains(err.Error(), `hybrid.fusion "sum"`) {
		t.Errorf("Export with a bad recipe: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "refused")); !os.IsNotExist(err) {
		t.Errorf("refused export left %s: %v", filepath.Join(tmp, "refused"), err)
	}
}
