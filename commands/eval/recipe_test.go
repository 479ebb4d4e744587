package evalcmd

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/internal/datatest"
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
	// An adaptive dense weight in the recipe: slope 0 is its base as a fixed weight; a slope
	// moves the ranking off it.
	for _, c := range []struct {
		a    fusion.Adaptive
		same bool
	}{
		{fusion.Adaptive{Base: 0.3}, true},
		{fusion.Adaptive{Base: 0.3, Slope: 0.4}, false},
	} {
		if err := export.WriteRecipe(model, &export.Recipe{Version: 1, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.3, Adaptive: &c.a}}); err != nil {
			t.Fatal(err)
		}
		got := runJSON(t, map[string]string{"model": model, "backend": "go"})
		if reflect.DeepEqual(got, explicit) != c.same || (!c.same && reflect.DeepEqual(got, dense)) {
			t.Errorf("recipe adaptive %s: %v; fixed 0.3 %v, dense %v", c.a.Describe(), got, explicit, dense)
		}
	}
	bad := filepath.Join(model, export.RecipeFile)
	for _, text := range []string{
		`{"version": 1, "hybrid": {"fusion": "zscore", "weight": 2}}`,
		`{"version": 1, "hybrid": {"fusion": "rrf", "adaptive": {"base": 0.9, "slope": -0.1}}}`,
	} {
		if err := os.WriteFile(bad, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := runErr(map[string]string{"model": model, "backend": "go"}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("corrupt recipe %s: %v", text, err)
		}
	}
	if err := runErr(map[string]string{"no-recipe": "true"}); err == nil || !strings.Contains(err.Error(), "-no-recipe applies") {
		t.Errorf("-no-recipe with bm25: %v", err)
	}
}

// TestModelReranker: eval -model DIR -reranker CE -depth K on a dataset with a dev split
// picks the weight on it (-weight dev, the default) and prints it on one line, "rerank weight
// W (dev ndcg@5 ... over N queries, depth K)", with the dev figures of that weight (-weight
// W gives the same); the recipe's reranker is applied without flags and -reranker replaces
// it; -interpolate zscore, and -weight with -interpolate off, are refused.
func TestModelReranker(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	model, ce, data := filepath.Join(dir, "model"), filepath.Join(dir, "ce"), filepath.Join(dir, "data")
	if err := exporttest.WriteHF(model, exporttest.Options{}, be, 11); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteCrossEncoderHF(ce, be, 3); err != nil {
		t.Fatal(err)
	}
	var dev, test []string
	for i := range 24 {
		dev = append(dev, fmt.Sprintf("d%d:%d", i, i%8))
		test = append(test, fmt.Sprintf("t%d:%d|%d", i, i%8, (i+3)%8))
	}
	datatest.Write(t, data, []string{"0", "1", "2", "3", "4", "5", "6", "7"}, map[string][]string{"dev": dev, "test": test})
	kv := map[string]string{"model": model, "data": data, "split": "dev", "backend": "go", "reranker": ce, "depth": "3", "min-t": "0"}
	o := parseKV(t, kv)
	var out bytes.Buffer
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^rerank weight (\S+) \(dev ndcg@5 [0-9.]+ over 24 queries, depth 3\)$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("output %q: no rerank weight line", out.String())
	}
	tuned := runJSON(t, kv)
	fixed := maps.Clone(kv)
	fixed["weight"] = m[1]
	if got := runJSON(t, fixed); !reflect.DeepEqual(got, tuned) {
		t.Errorf("-weight %s: %v, -weight dev: %v", m[1], got, tuned)
	}
	dense := runJSON(t, map[string]string{"model": model, "data": data, "split": "dev", "backend": "go"})
	if m[1] != "0" && reflect.DeepEqual(dense, tuned) {
		t.Errorf("weight %s: the reranking changed nothing", m[1])
	}

	// The recipe's reranker, applied without flags; -reranker replaces it.
	withRecipe := filepath.Join(dir, "recipe")
	if err := exporttest.WriteHF(withRecipe, exporttest.Options{}, be, 11); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteCrossEncoderHF(filepath.Join(withRecipe, "reranker"), be, 3); err != nil {
		t.Fatal(err)
	}
	w := 0.7
	if err := export.WriteRecipe(withRecipe, &export.Recipe{Version: 1, Reranker: &export.RerankerRecipe{Path: "reranker", Depth: 3, Weight: &w}}); err != nil {
		t.Fatal(err)
	}
	explicit := map[string]string{"model": model, "data": data, "split": "dev", "backend": "go", "reranker": ce, "depth": "3", "weight": "0.7"}
	if got, want := runJSON(t, map[string]string{"model": withRecipe, "data": data, "split": "dev", "backend": "go"}), runJSON(t, explicit); !reflect.DeepEqual(got, want) {
		t.Errorf("the recipe's reranker: %v, -reranker CE -weight 0.7: %v", got, want)
	}
	replaced := maps.Clone(explicit)
	replaced["model"], replaced["weight"] = withRecipe, "1"
	explicit["weight"] = "1"
	if got, want := runJSON(t, replaced), runJSON(t, explicit); !reflect.DeepEqual(got, want) {
		t.Errorf("-reranker over a recipe's reranker: %v, want %v", got, want)
	}

	for _, c := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"interpolate": "zscore"}, "interpolates minmax"},
		{map[string]string{"interpolate": "off", "weight": "0.5"}, "-interpolate off"},
		{map[string]string{"split": "test", "data": filepath.Join(dir, "nodev")}, "no split named dev"},
	} {
		args := maps.Clone(kv)
		maps.Copy(args, c.kv)
		if args["data"] != data {
			datatest.Write(t, args["data"], []string{"0", "1"}, map[string][]string{"test": {"q:0"}})
		}
		if err := runErr(args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.kv, err, c.want)
		}
	}
}
