package exportcmd

import (
	"os"
	"path/filepath"
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
