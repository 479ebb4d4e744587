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
		{"reranker path up", `{"version": 1, "reranker": {"path": "../ce", "depth": 20}}`, []string{`reranker.path "../ce"`, "inside the model directory"}},
		{"reranker path absolute", `{"version": 1, "reranker": {"path": "/tmp/ce", "depth": 20}}`, []string{`reranker.path "/tmp/ce"`}},
		{"reranker path unclean", `{"version": 1, "reranker": {"path": "a/../ce", "depth": 20}}`, []string{`reranker.path "a/../ce"`}},
		{"reranker path empty", `{"version": 1, "reranker": {"depth": 20}}`, []string{`reranker.path ""`}},
		{"reranker depth 0", `{"version": 1, "reranker": {"path": "reranker", "depth": 0}}`, []string{"reranker.depth 0", "> 0"}},
		{"reranker no depth", `{"version": 1, "reranker": {"path": "reranker"}}`, []string{"reranker.depth 0"}},
		{"reranker weight 1.5", `{"version": 1, "reranker": {"path": "reranker", "depth": 20, "weight": 1.5}}`, []string{"reranker.weight 1.5", "[0, 1]"}},
		{"reranker weight negative", `{"version": 1, "reranker": {"path": "reranker", "depth": 20, "weight": -0.2}}`, []string{"reranker.weight -0.2"}},
		{"reranker field", `{"version": 1, "reranker": {"path": "reranker", "depth": 20, "m": 3}}`, []string{`unknown field "m"`}},
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

// TestRecipeRerankerDir: a recipe whose reranker directory is missing, or holds no
// cross-encoder, is one error naming the recipe file and the field, from ReadRecipe and
// LoadHF; a cross-encoder there reads, with Dir set to it.
func TestRecipeRerankerDir(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := exporttest.WriteHF(dir, exporttest.Options{}, be, 1); err != nil {
		t.Fatal(err)
	}
	w := 0.4
	r := &export.Recipe{Version: 1, Reranker: &export.RerankerRecipe{Path: "ce/tiny", Depth: 10, Weight: &w}}
	if err := export.WriteRecipe(dir, r); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, export.RecipeFile)
	for _, c := range []struct {
		name  string
		setup func(ce string) error
		want  string // "" reads
	}{
		{"missing", func(string) error { return nil }, "no such directory"},
		{"empty directory", func(ce string) error { return os.MkdirAll(ce, 0o755) }, "no config.json"},
		{"a bi-encoder", func(ce string) error { return exporttest.WriteHF(ce, exporttest.Options{}, be, 2) }, "is not a cross-encoder"},
		{"a cross-encoder", func(ce string) error { return exporttest.WriteCrossEncoderHF(ce, be, 3) }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ce := filepath.Join(dir, "ce", "tiny")
			if err := os.RemoveAll(filepath.Join(dir, "ce")); err != nil {
				t.Fatal(err)
			}
			if err := c.setup(ce); err != nil {
				t.Fatal(err)
			}
			got, err := export.ReadRecipe(dir)
			_, lerr := export.LoadHF(dir, be)
			if c.want == "" {
				if err != nil || lerr != nil {
					t.Fatalf("ReadRecipe: %v; LoadHF: %v", err, lerr)
				}
				if got.Reranker.Dir != ce || got.Reranker.Depth != 10 || *got.Reranker.Weight != 0.4 {
					t.Errorf("reranker %+v, want Dir %s", got.Reranker, ce)
				}
				return
			}
			for _, e := range []error{err, lerr} {
				if e == nil {
					t.Fatalf("read, want an error")
				}
				for _, s := range []string{p, `reranker.path "ce/tiny"`, c.want} {
					if !strings.Contains(e.Error(), s) {
						t.Errorf("error %q, want %q in it", e, s)
					}
				}
			}
		})
	}
}

// TestExportRecipeReranker: an hf export given a recipe with a reranker copies the
// cross-encoder into OUT/reranker beside the recipe (listed in the manifest); the model
// loaded back carries it into a re-export and into an index (Manifest.Reranker, the
// cross-encoder in the index's reranker/); NoRecipe drops it, and a reranker that is no
// cross-encoder is refused with nothing written.
func TestExportRecipeReranker(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ce, bi := filepath.Join(tmp, "ce"), filepath.Join(tmp, "bi")
	if err := exporttest.WriteCrossEncoderHF(ce, be, 3); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteHF(bi, exporttest.Options{}, be, 2); err != nil {
		t.Fatal(err)
	}
	m, err := exporttest.BiEncoder(exporttest.Options{}, be, 1)
	if err != nil {
		t.Fatal(err)
	}
	w := 0.3
	r := &export.Recipe{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.6},
		Reranker: &export.RerankerRecipe{Path: export.RerankerDir, Depth: 12, Weight: &w, Dir: ce}}
	dir := filepath.Join(tmp, "model")
	man, err := export.Export(m, export.Options{Format: export.FormatHF, Out: dir, Recipe: r})
	if err != nil {
		t.Fatal(err)
	}
	ceMan, err := export.ReadManifest(ce)
	if err != nil {
		t.Fatal(err)
	}
	for f, sum := range ceMan.Files {
		if got := man.Files["reranker/"+f]; got != sum {
			t.Errorf("export manifest: reranker/%s sha256 %q, want the cross-encoder's %q", f, got, sum)
		}
	}
	loaded, err := export.LoadHF(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	want := export.RerankerRecipe{Path: "reranker", Depth: 12, Weight: &w, Dir: filepath.Join(dir, "reranker")}
	if rr := loaded.Recipe.Reranker; rr == nil || !reflect.DeepEqual(*rr, want) {
		t.Fatalf("LoadHF recipe reranker %+v, want %+v", rr, want)
	}
	for _, c := range []struct {
		name string
		opts export.Options
		want bool // the reranker is carried
	}{
		{"hf again", export.Options{Format: export.FormatHF}, true},
		{"index", export.Options{Format: export.FormatIndex}, true},
		{"hf, NoRecipe", export.Options{Format: export.FormatHF, NoRecipe: true}, false},
		{"index, NoRecipe", export.Options{Format: export.FormatIndex, NoRecipe: true}, false},
		{"index, another recipe", export.Options{Format: export.FormatIndex, Recipe: &export.Recipe{Version: 1, Hybrid: r.Hybrid}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Out = filepath.Join(tmp, "out", strings.ReplaceAll(c.name, " ", "_"))
			man, err := export.Export(loaded, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(filepath.Join(c.opts.Out, "reranker", "model.safetensors"))
			if (statErr == nil) != c.want {
				t.Errorf("reranker/model.safetensors: %v, want it %v", statErr, c.want)
			}
			var got *export.RerankerRecipe
			if c.opts.Format == export.FormatIndex {
				got = man.Reranker
			} else if rr, err := export.ReadRecipe(c.opts.Out); err != nil {
				t.Fatal(err)
			} else if rr != nil {
				got = rr.Reranker
			}
			if (got != nil) != c.want || (got != nil && (got.Path != "reranker" || got.Depth != 12 || *got.Weight != w)) {
				t.Errorf("reranker %+v, want it %v (reranker, 12, %g)", got, c.want, w)
			}
		})
	}

	for _, c := range []struct {
		name string
		dir  string
		want string
	}{
		{"a bi-encoder", bi, "is not a cross-encoder"},
		{"no directory", "", "no cross-encoder directory"},
	} {
		out := filepath.Join(tmp, "refused", "model")
		bad := &export.Recipe{Version: 1, Reranker: &export.RerankerRecipe{Path: "reranker", Depth: 5, Dir: c.dir}}
		if _, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out, Recipe: bad}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if _, err := os.Stat(filepath.Join(tmp, "refused")); !os.IsNotExist(err) {
			t.Errorf("%s: refused export left %s: %v", c.name, filepath.Join(tmp, "refused"), err)
		}
	}
}
