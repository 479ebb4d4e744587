package importcmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/library/importer"
)

const shop = "../../library/importer/testdata/shop.yaml"

func runImport(t *testing.T, o options) (int, string, error) {
	t.Helper()
	var b strings.Builder
	code, err := run(context.Background(), o, &b)
	return code, b.String(), err
}

func TestImport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "lib.jsonl")
	fns := filepath.Join(dir, "fns.json")
	os.WriteFile(fns, []byte(`[{"type":"function","function":{"name":"add","description":"Add.","parameters":{"type":"dict","properties":{"a":{"type":"float"}}}}},
		{"name":"now","description":"Time.","input_schema":{"type":"object"}}]`), 0o644)
	code, stdout, err := runImport(t, options{out: out, src: importer.Sources{OpenAPI: []string{shop}, Functions: []string{fns}}})
	if code != 0 || err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, stdout)
	}
	for _, s := range []string{"openapi shop (" + shop + "): 5 tools", "functions (" + fns + "): 2 tools", "1 schemas normalised to JSON Schema (type dict→object ×1, type float→number ×1)",
		"wrote " + out + ": 7 tools (7 added, 0 changed, 0 removed, 0 unchanged)", "added: shop.createCategory, "} {
		if !strings.Contains(stdout, s) {
			t.Errorf("output lacks %q:\n%s", s, stdout)
		}
	}
	// Every command loads it as a dataset.
	if d, err := data.Load(out); err != nil || len(d.Tools) != 7 {
		t.Fatalf("data.Load: %v", err)
	}

	// Re-import: the list changed (one tool changed, one removed, one added), the spec
	// did not; a source that fails keeps its tools in the library.
	os.WriteFile(fns, []byte(`[{"name":"add","description":"Add two numbers.","parameters":{"type":"object","properties":{"a":{"type":"number"}}}},
		{"name":"sub","description":"Subtract."}]`), 0o644)
	code, stdout, err = runImport(t, options{out: out, src: importer.Sources{OpenAPI: []string{"shop=" + filepath.Join(dir, "missing.yaml")}, Functions: []string{fns}}})
	if code != 1 || err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("exit %d, error %v: want 1 naming the missing spec", code, err)
	}
	if want := "wrote " + out + ": 7 tools (1 added, 1 changed, 1 removed, 5 unchanged)"; !strings.Contains(stdout, want) ||
		!strings.Contains(stdout, "added: sub") || !strings.Contains(stdout, "changed: add") || !strings.Contains(stdout, "removed: now") {
		t.Errorf("output lacks %q and the changes:\n%s", want, stdout)
	}

	// -dry-run writes nothing; -replace drops the other sources; -template is kept.
	before, _ := os.ReadFile(out)
	code, stdout, _ = runImport(t, options{out: out, dryRun: true, replace: true, src: importer.Sources{Functions: []string{fns}}})
	if after, _ := os.ReadFile(out); code != 0 || string(after) != string(before) || !strings.Contains(stdout, "would write "+out+": 2 tools (0 added, 0 changed, 5 removed, 2 unchanged)") {
		t.Errorf("dry run: exit %d, file changed %v:\n%s", code, string(after) != string(before), stdout)
	}
	code, _, err = runImport(t, options{out: out, replace: true, template: "{{.ID}} {{.Description}}", src: importer.Sources{Functions: []string{"math=" + fns}}})
	l, rerr := library.Read(out)
	if code != 0 || err != nil || rerr != nil || len(l.Tools) != 2 || l.Tools[0].ID() != "math.add" || l.Template != "{{.ID}} {{.Description}}" {
		t.Fatalf("exit %d %v %v: %+v", code, err, rerr, l)
	}
	if d, _ := data.Load(out); d.Tools[0].Text != "math.add Add two numbers." {
		t.Errorf("text %q", d.Tools[0].Text)
	}
}

func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\n"), 0o644)
	for _, c := range []struct {
		o    options
		code int
		want string
	}{
		{options{src: importer.Sources{OpenAPI: []string{shop}}}, 2, "-out"},
		{options{out: filepath.Join(dir, "lib.json"), src: importer.Sources{OpenAPI: []string{shop}}}, 2, ".jsonl"},
		{options{out: filepath.Join(dir, "lib.jsonl")}, 2, "nothing to import"},
		{options{out: filepath.Join(dir, "lib.jsonl"), template: "{{.Nope}}", src: importer.Sources{OpenAPI: []string{shop}}}, 2, "-template"},
		{options{out: bad, src: importer.Sources{OpenAPI: []string{shop}}}, 1, "bad.jsonl:1: malformed JSON"},
		{options{out: filepath.Join(dir, "lib.jsonl"), src: importer.Sources{OpenAPI: []string{shop, "x=" + shop, shop}}}, 1, "both import openapi tools into namespace \"shop\""},
		{options{out: filepath.Join(dir, "lib.jsonl"), src: importer.Sources{MCP: []string{filepath.Join(dir, "none.json")}}}, 1, "none.json"},
	} {
		code, _, err := runImport(t, c.o)
		if code != c.code || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: exit %d, error %v; want %d, %q", c.o, code, err, c.code, c.want)
		}
	}
	if code := Main([]string{"-out"}); code != 2 {
		t.Errorf("Main with a flag missing its value: %d", code)
	}
}

// TestImportStrict: an OpenAPI description with an operation that does not load costs that
// operation, named in the output; -strict refuses the description whole.
func TestImportStrict(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "galaxy.yaml")
	os.WriteFile(spec, []byte(`openapi: 3.1.0
info: {title: galaxy, version: '1'}
paths:
  /planets:
    get: {operationId: listPlanets, responses: {'200': {description: ok}}}
    post: {operationId: createPlanet, parameters: oops, responses: {'200': {description: ok}}}
`), 0o644)
	out := filepath.Join(dir, "lib.jsonl")
	code, stdout, err := runImport(t, options{out: out, src: importer.Sources{OpenAPI: []string{spec}}})
	if code != 0 || err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, stdout)
	}
	for _, s := range []string{"openapi galaxy (" + spec + "): 1 tools", "POST /planets (#/paths/~1planets/post): cannot construct", "added: galaxy.listPlanets"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("output lacks %q:\n%s", s, stdout)
		}
	}
	strictOut := filepath.Join(dir, "strict.jsonl")
	if code := Main([]string{"-strict", "-openapi", spec, "-out", strictOut}); code != 1 {
		t.Errorf("-strict: exit %d, want 1", code)
	}
	if _, err := os.Stat(strictOut); !os.IsNotExist(err) {
		t.Errorf("-strict wrote %s (%v)", strictOut, err)
	}
}

// TestImportDuplicateID: two sources giving one tool id fail before anything is reported
// written, and nothing is.
func TestImportDuplicateID(t *testing.T) {
	dir := t.TempDir()
	fns := filepath.Join(dir, "fns.json")
	os.WriteFile(fns, []byte(`[{"name":"getItem","description":"Get an item.","parameters":{"type":"object"}}]`), 0o644)
	for _, dry := range []bool{false, true} {
		out := filepath.Join(dir, "lib.jsonl")
		code, stdout, err := runImport(t, options{out: out, dryRun: dry, src: importer.Sources{OpenAPI: []string{shop}, Functions: []string{"shop=" + fns}}})
		if code != 1 || err == nil || !strings.Contains(err.Error(), `duplicate tool "shop.getItem"`) || !strings.Contains(err.Error(), "not written") {
			t.Errorf("dry run %v: exit %d, error %v; want 1 naming the duplicate", dry, code, err)
		}
		if strings.Contains(stdout, "wrote") || strings.Contains(stdout, "would write") || strings.Contains(stdout, "added:") {
			t.Errorf("dry run %v: output says it wrote:\n%s", dry, stdout)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("dry run %v: %s written (%v)", dry, out, err)
		}
	}
}
