package evalcmd

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

// TestModelRecipe: eval -model DIR applies DIR's recipe as -hybrid would, -no-recipe gives the
// model alone, -hybrid replaces the recipe, a corrupt recipe is an error naming the file, and
// -no-recipe without a model is refused.
func TestModelRecipe(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plain, model := filepath.Join(dir, "plain"), filepath.Join(dir, "model")
	for _, m := range []string{plain, model} {
		if err := exporttest.WriteHF(m, exporttest.Options{}, be, 11); err != nil {
			t.Fatal(err)
		}
	}
	if err := export.WriteRecipe(model, &export.Recipe{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.3}}); err != nil {
		t.Fatal(err)
	}
	dense := runJSON(t, map[string]string{"model": plain, "backend": "go"})
	explicit := runJSON(t, map[string]string{"model": plain, "backend": "go", "hybrid": "zscore", "hybrid-weight": "0.3"})
	if reflect.DeepEqual(dense, explicit) {
		t.Fatal("-hybrid zscore changed nothing: the comparison is vacuous")
	}
	for _, c := range []struct {
		kv   map[string]string
		want map[string]any
	}{
		{map[string]string{"model": model, "backend": "go"}, explicit},
		{map[string]string{"model": model, "backend": "go", "no-recipe": "true"}, dense},
		{map[string]string{"model": model, "backend": "go", "hybrid": "zscore", "hybrid-weight": "0.3"}, explicit},
	} {
		if got := runJSON(t, c.kv); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v: %v, want %v", c.kv, got, c.want)
		}
	}
	bad := filepath.Join(model, export.RecipeFile)
	if err := os.WriteFile(bad, []byte(`{"version": 1, "hybrid": {"fusion": "zscore", "weight": 2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runErr(map[string]string{"model": model, "backend": "go"}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("corrupt recipe: %v", err)
	}
	if err := runErr(map[string]string{"no-recipe": "true"}); err == nil || !strings.Contains(err.Error(), "-no-recipe applies") {
		t.Errorf("-no-recipe with bm25: %v", err)
	}
}
