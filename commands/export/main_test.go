package exportcmd

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/fusion"
)

// testRun opens the go backend and writes an untrained bi-encoder run (exporttest.WriteRun,
// default options, seed 9) at dir/run; it returns the backend and the run.
func testRun(t *testing.T, dir string) (compute.Backend, string) {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if err := exporttest.WriteRun(run, exporttest.Options{}, be, 9); err != nil {
		t.Fatal(err)
	}
	return be, run
}

// testModel writes testRun's run at dir/run and its hf export at dir/model, and returns both.
func testModel(t *testing.T, dir string) (run, model string) {
	t.Helper()
	_, run = testRun(t, dir)
	model = filepath.Join(dir, "model")
	if _, err := runExport(run, "hf", model, false, "", "go"); err != nil {
		t.Fatal(err)
	}
	return run, model
}

func TestExportCommand(t *testing.T) {
	_, run := testRun(t, t.TempDir())
	tmp := t.TempDir()
	for _, tc := range []struct {
		format, data string
		files        []string
	}{
		{"hf", "", []string{"config.json", "model.safetensors", "tokenizer.json", "modules.json", "2_Normalize", "onnx/model.onnx"}},
		{"onnx", "", []string{"model.onnx", "vocab.txt"}},
		{"index", "", []string{"tools.safetensors", "tools.jsonl", "query/model.safetensors"}},
		{"index", "../../data/default", []string{"tools.jsonl"}},
	} {
		out := filepath.Join(tmp, tc.format)
		if tc.data != "" {
			out += "-data"
		}
		man, err := runExport(run, tc.format, out, false, tc.data, "go")
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if man.Kind != export.KindBiEncoder || man.Source != run || man.DataFingerprint == "" {
			t.Fatalf("%s: manifest %+v", tc.format, man)
		}
		for _, f := range append(tc.files, export.ManifestFile) {
			if _, err := os.Stat(filepath.Join(out, f)); err != nil {
				t.Errorf("%s: %v", tc.format, err)
			}
		}
	}
	// Again without -force: refused; with -force: replaced.
	out := filepath.Join(tmp, "hf")
	if _, err := runExport(run, "hf", out, false, "", "go"); err == nil || !strings.Contains(err.Error(), "-force") {
		t.Fatalf("existing output: %v", err)
	}
	if _, err := runExport(run, "onnx", out, true, "", "go"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		run, format, out, data, want string
	}{
		{"", "hf", out, "", "-run and -out are required"},
		{run, "hf", "", "", "-run and -out are required"},
		{run, "gguf", out, "", `unknown -format "gguf"`},
		{run, "hf", out, "../../data/default", "-data is only used"},
		{tmp, "hf", filepath.Join(tmp, "x"), "", "no checkpoints"},
	} {
		if _, err := runExport(tc.run, tc.format, tc.out, false, tc.data, "go"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v", tc, err)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "x")); err == nil {
		t.Error("failed export left its output")
	}
}

// TestExportOutParents: -out under missing directories creates them as mkdir -p does (0755
// less the umask, like every directory of the export), and an -out under a file is one
// error naming that file, without a doubled "export: ".
func TestExportOutParents(t *testing.T) {
	_, run := testRun(t, t.TempDir())
	tmp := t.TempDir()
	ref := filepath.Join(tmp, "ref") // the mode a plain 0755 mkdir gets under this umask
	if err := os.Mkdir(ref, 0o755); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(ref)
	if err != nil {
		t.Fatal(err)
	}
	want := fi.Mode().Perm()
	out := filepath.Join(tmp, "a", "b", "onnx")
	if _, err := runExport(run, "onnx", out, false, "", "go"); err != nil {
		t.Fatalf("export under missing parents: %v", err)
	}
	err = filepath.WalkDir(filepath.Join(tmp, "a"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runExport(run, "onnx", filepath.Join(file, "x", "out"), false, "", "go")
	if err == nil || !strings.Contains(err.Error(), file+" is not a directory") || strings.HasPrefix(err.Error(), "export:") {
		t.Errorf("-out under a file: %v; want one message naming %s, without a leading \"export:\" (main adds it)", err, file)
	}
	// An export that fails after its parents were made leaves none of them behind.
	_, err = exportRun(run, "index", filepath.Join(tmp, "c", "d", "index"), false, "", "go", filepath.Join(tmp, "no-refiner"))
	if err == nil || !strings.Contains(err.Error(), "no-refiner") {
		t.Fatalf("export with a missing -refiner: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "c")); err == nil {
		t.Error("a failed export left the parents it created")
	}
}

// TestRecipeFlags: -hybrid, -hybrid-weight (W or adaptive:BASE,SLOPE) and -selected-on make
// the export's recipe, as serve takes -hybrid and -hybrid-weight.
func TestRecipeFlags(t *testing.T) {
	for _, c := range []struct {
		hybrid     string
		w          string
		selectedOn string
		adds       bool // -clauses or -recipe-reranker given
		want       *export.HybridRecipe
		err        string
	}{
		{"", "", "", false, nil, ""},
		{"zscore", "0.3", "toolmix dev", false, &export.HybridRecipe{Fusion: "zscore", Weight: 0.3}, ""},
		{"minmax", "", "", false, &export.HybridRecipe{Fusion: "minmax", Weight: 0.5}, ""},
		{"rrf", "", "", false, &export.HybridRecipe{Fusion: "rrf"}, ""},
		{"rrf", "0.3", "", false, nil, "rrf has no weight"},
		{"", "0.3", "", false, nil, "-hybrid-weight needs -hybrid"},
		{"", "", "dev", false, nil, "-selected-on needs -hybrid, -clauses or -recipe-reranker"},
		{"", "", "dev", true, nil, ""}, // recorded on the model's own recipe with what is added
		{"zscore", "2", "", false, nil, "-hybrid.weight 2"},
		{"zscore", "heavy", "", false, nil, "want W in [0, 1] or adaptive:BASE,SLOPE"},
		{"sum", "", "", false, nil, `-hybrid.fusion "sum"`},
		{"zscore", "adaptive:0.95,-0.075", "", false, &export.HybridRecipe{Fusion: "zscore", Weight: 0.95, Adaptive: &fusion.Adaptive{Base: 0.95, Slope: -0.075}}, ""},
		{"zscore", "adaptive:1.2,-0.1", "", false, &export.HybridRecipe{Fusion: "zscore", Weight: 1, Adaptive: &fusion.Adaptive{Base: 1.2, Slope: -0.1}}, ""},
		{"rrf", "adaptive:0.95,-0.075", "", false, nil, "needs -hybrid minmax or zscore"},
		{"", "adaptive:0.95,-0.075", "", false, nil, "needs -hybrid minmax or zscore"},
		{"zscore", "adaptive:0.95", "", false, nil, "want BASE,SLOPE"},
		{"zscore", "adaptive:0.95,x", "", false, nil, "slope"},
		{"zscore", "adaptive:NaN,0", "", false, nil, "finite"},
	} {
		r, err := recipeFlags(c.hybrid, c.w, c.selectedOn, c.adds)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q %q: error %v, want %q", c.hybrid, c.w, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q %q: %v", c.hybrid, c.w, err)
		}
		var got *export.HybridRecipe
		if r != nil {
			got = r.Hybrid
			if r.SelectedOn != c.selectedOn || r.Version != export.RecipeVersion {
				t.Errorf("%q: recipe %+v", c.hybrid, r)
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q %q: hybrid %+v, want %+v", c.hybrid, c.w, got, c.want)
		}
	}
}

// TestExportClauses: -clauses adds per-clause retrieval to the recipe of -hybrid, else to the
// model's own recipe (whose fusion it keeps), and refuses -no-recipe.
func TestExportClauses(t *testing.T) {
	tmp := t.TempDir()
	_, model := testModel(t, tmp)
	own := &export.HybridRecipe{Fusion: "zscore", Weight: 0.7}
	if err := export.WriteRecipe(model, &export.Recipe{Version: 1, Hybrid: own, SelectedOn: "dev"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want *export.HybridRecipe
	}{
		{"model's own fusion", nil, own},
		{"-hybrid's", []string{"-hybrid", "rrf"}, &export.HybridRecipe{Fusion: "rrf"}},
	} {
		out := filepath.Join(tmp, c.name)
		args := append([]string{"-model", model, "-format", "hf", "-out", out, "-clauses", "-backend", "go"}, c.args...)
		if rc := Main(args); rc != 0 {
			t.Fatalf("%s: exit %d", c.name, rc)
		}
		r, err := export.ReadRecipe(out)
		if err != nil {
			t.Fatal(err)
		}
		if r == nil || r.Clauses == nil || !reflect.DeepEqual(r.Hybrid, c.want) {
			t.Fatalf("%s: recipe %+v, want clauses and hybrid %+v", c.name, r, c.want)
		}
	}
	if rc := Main([]string{"-model", model, "-format", "hf", "-out", filepath.Join(tmp, "x"), "-clauses", "-no-recipe"}); rc != 2 {
		t.Fatalf("-clauses -no-recipe: exit %d, want 2", rc)
	}
	// The -clauses-* flags given are recorded; the others stay rerank's defaults (zero).
	out := filepath.Join(tmp, "mix")
	if rc := Main([]string{"-model", model, "-format", "hf", "-out", out, "-backend", "go", "-clauses", "-clauses-merge", "mix", "-clauses-whole", "0.7"}); rc != 0 {
		t.Fatalf("-clauses-merge mix: exit %d", rc)
	}
	r, err := export.ReadRecipe(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := (export.ClausesRecipe{Merge: "mix", Whole: 0.7}); r == nil || r.Clauses == nil || *r.Clauses != want {
		t.Fatalf("recipe %+v, want clauses %+v", r, want)
	}
	for _, args := range [][]string{
		{"-clauses-merge", "mix"},             // without -clauses
		{"-clauses", "-clauses-merge", "sum"}, // unknown rule
		{"-clauses", "-clauses-whole", "1.5"}, // out of range
	} {
		bad := filepath.Join(tmp, "bad")
		if rc := Main(append([]string{"-model", model, "-format", "hf", "-out", bad}, args...)); rc != 2 {
			t.Errorf("%v: exit %d, want 2", args, rc)
		}
		if _, err := os.Stat(bad); !os.IsNotExist(err) {
			t.Errorf("%v: %s written (%v)", args, bad, err)
		}
	}
}
