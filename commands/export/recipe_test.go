package exportcmd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
)

// TestExportRecipeFlags: `export -format hf -hybrid zscore -hybrid-weight W` writes the
// model's recipe; `export -model DIR -format index` records its hybrid without flags
// (-no-recipe: none); a corrupt recipe exits 1 with no output left.
func TestExportRecipeFlags(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	if err := exporttest.WriteHF(model, exporttest.Options{}, be, 1); err != nil {
		t.Fatal(err)
	}
	withRecipe := filepath.Join(tmp, "general")
	if code := Main([]string{"-model", model, "-format", "hf", "-out", withRecipe, "-hybrid", "zscore", "-hybrid-weight", "0.3", "-selected-on", "toolmix dev"}); code != 0 {
		t.Fatalf("export -hybrid: exit %d", code)
	}
	r, err := export.ReadRecipe(withRecipe)
	if err != nil || r == nil || *r.Hybrid != (export.HybridRecipe{Fusion: "zscore", Weight: 0.3}) || r.SelectedOn != "toolmix dev" {
		t.Fatalf("recipe %+v, %v", r, err)
	}
	for _, c := range []struct {
		args []string
		want *export.HybridRecipe
	}{
		{nil, r.Hybrid},
		{[]string{"-no-recipe"}, nil},
		{[]string{"-hybrid", "rrf"}, &export.HybridRecipe{Fusion: "rrf"}},
	} {
		out := filepath.Join(tmp, "index", string(rune('a'+len(c.args))))
		if code := Main(append([]string{"-model", withRecipe, "-format", "index", "-out", out}, c.args...)); code != 0 {
			t.Fatalf("%v: exit %d", c.args, code)
		}
		man, err := export.ReadManifest(out)
		if err != nil {
			t.Fatal(err)
		}
		if (man.Hybrid == nil) != (c.want == nil) || (c.want != nil && *man.Hybrid != *c.want) {
			t.Errorf("%v: index hybrid %+v, want %+v", c.args, man.Hybrid, c.want)
		}
	}
	if err := os.WriteFile(filepath.Join(withRecipe, export.RecipeFile), []byte(`{"version": 1, "hybrid": {"fusion": "zscore", "weight": 2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "bad", "index")
	if code := Main([]string{"-model", withRecipe, "-format", "index", "-out", out}); code != 1 {
		t.Errorf("corrupt recipe: exit %d, want 1", code)
	}
	if _, err := os.Stat(filepath.Join(tmp, "bad")); !os.IsNotExist(err) {
		t.Errorf("corrupt recipe: %s left (%v)", filepath.Join(tmp, "bad"), err)
	}
	if code := Main([]string{"-model", model, "-format", "hf", "-out", filepath.Join(tmp, "x"), "-hybrid-weight", "0.3"}); code != 2 {
		t.Errorf("-hybrid-weight without -hybrid: exit %d, want 2", code)
	}
}

// TestExportRecipeRerankerFlags: -recipe-reranker CE with its depth and weight writes the
// reranker into the recipe and CE into OUT/reranker; re-exports of that model (again, with
// other lengths, interpolated, with -clauses, as an index) carry it, -no-recipe drops it;
// flags that do not go together exit 2 and a reranker that is no cross-encoder exits 1, with
// nothing written.
func TestExportRecipeRerankerFlags(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	plain, ce, model := filepath.Join(tmp, "plain"), filepath.Join(tmp, "ce"), filepath.Join(tmp, "model")
	if err := exporttest.WriteHF(plain, exporttest.Options{}, be, 1); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteCrossEncoderHF(ce, be, 3); err != nil {
		t.Fatal(err)
	}
	if code := Main([]string{"-model", plain, "-format", "hf", "-out", model, "-hybrid", "zscore", "-hybrid-weight", "0.6",
		"-recipe-reranker", ce, "-recipe-rerank-depth", "7", "-recipe-rerank-weight", "0.4"}); code != 0 {
		t.Fatalf("export -recipe-reranker: exit %d", code)
	}
	w := 0.4
	want := export.RerankerRecipe{Path: "reranker", Depth: 7, Weight: &w}
	check := func(name, out string, carried bool, r *export.RerankerRecipe) {
		t.Helper()
		_, err := os.Stat(filepath.Join(out, "reranker", "config.json"))
		if (err == nil) != carried {
			t.Errorf("%s: reranker/config.json: %v, want it %v", name, err, carried)
		}
		if (r != nil) != carried || (r != nil && (r.Path != want.Path || r.Depth != want.Depth || r.Weight == nil || *r.Weight != w)) {
			t.Errorf("%s: reranker %+v, want it %v (%+v)", name, r, carried, want)
		}
	}
	r, err := export.ReadRecipe(model)
	if err != nil || r.Hybrid == nil {
		t.Fatalf("recipe %+v, %v", r, err)
	}
	check("-recipe-reranker", model, true, r.Reranker)
	for _, c := range []struct {
		name    string
		args    []string
		carried bool
	}{
		{"hf again", nil, true},
		{"lengths", []string{"-query-len", "16"}, true},
		{"interpolated", []string{"-interpolate", plain, "-interpolate-weight", "0.5"}, true},
		{"clauses", []string{"-clauses"}, true},
		{"index", []string{"-format", "index"}, true},
		{"-no-recipe", []string{"-no-recipe"}, false},
	} {
		out := filepath.Join(tmp, "re", strings.ReplaceAll(c.name, " ", "_"))
		if code := Main(append([]string{"-model", model, "-out", out}, c.args...)); code != 0 {
			t.Fatalf("%s: exit %d", c.name, code)
		}
		var got *export.RerankerRecipe
		if slices.Contains(c.args, "index") {
			man, err := export.ReadManifest(out)
			if err != nil {
				t.Fatal(err)
			}
			got = man.Reranker
		} else if r, err := export.ReadRecipe(out); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		} else if r != nil {
			got = r.Reranker
			if c.name == "clauses" && r.Clauses == nil {
				t.Errorf("clauses: recipe %+v without clauses", r)
			}
		}
		check(c.name, out, c.carried, got)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"depth alone", []string{"-recipe-rerank-depth", "5"}, 2},
		{"weight alone", []string{"-recipe-rerank-weight", "0.5"}, 2},
		{"weight 1.5", []string{"-recipe-reranker", ce, "-recipe-rerank-weight", "1.5"}, 2},
		{"depth 0", []string{"-recipe-reranker", ce, "-recipe-rerank-depth", "0"}, 2},
		{"-no-recipe", []string{"-recipe-reranker", ce, "-no-recipe"}, 2},
		{"a bi-encoder", []string{"-recipe-reranker", plain}, 1},
	} {
		out := filepath.Join(tmp, "bad", "out")
		if code := Main(append([]string{"-model", plain, "-format", "hf", "-out", out}, c.args...)); code != c.code {
			t.Errorf("%s: exit %d, want %d", c.name, code, c.code)
		}
		if _, err := os.Stat(filepath.Join(tmp, "bad")); !os.IsNotExist(err) {
			t.Errorf("%s: %s left (%v)", c.name, filepath.Join(tmp, "bad"), err)
		}
	}
}
