package importer

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/library"
)

// TestRoundTrip imports every real source there is here, writes the library, reads it back
// (identical), loads it as a dataset, and re-imports it (nothing changed).
func TestRoundTrip(t *testing.T) {
	importAll := func() (*library.Library, []Report) {
		var l library.Library
		var reports []Report
		add := func(tools []library.Tool, r Report, err error) {
			if err != nil {
				t.Fatal(err)
			}
			l.Tools = append(l.Tools, tools...)
			reports = append(reports, r)
		}
		add(OpenAPI(t.Context(), "testdata/shop.yaml", "shop"))
		add(OpenAPI(t.Context(), "testdata/shop31.json", "shop31"))
		if _, err := os.Stat(bfcl + "/functions.json"); err == nil {
			add(Functions(bfcl+"/functions.json", ""))
		}
		if p := filepath.Join(cacheDir(), "mcp-npm/node_modules/@octokit/openapi/generated/api.github.com.json"); !testing.Short() {
			if _, err := os.Stat(p); err == nil {
				add(OpenAPI(t.Context(), p, "github"))
			}
		}
		if node, err := exec.LookPath("node"); err == nil {
			p := filepath.Join(cacheDir(), "mcp-npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js")
			if _, err := os.Stat(p); err == nil {
				add(MCPServerTools(t.Context(), "memory", MCPServer{Command: node, Args: []string{p},
					Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "m.jsonl")}}, "mcp.json"))
			}
		}
		return &l, reports
	}
	lib, reports := importAll()
	for _, r := range reports {
		t.Log(r)
	}
	p := filepath.Join(t.TempDir(), "lib.jsonl")
	if err := library.Write(p, lib); err != nil {
		t.Fatal(err)
	}
	back, err := library.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, lib) {
		for i := range lib.Tools {
			if !reflect.DeepEqual(back.Tools[i], lib.Tools[i]) {
				t.Fatalf("tool %d read back\n%+v\nimported\n%+v", i, back.Tools[i], lib.Tools[i])
			}
		}
		t.Fatal("library read back differs")
	}
	d, err := data.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tools) != len(lib.Tools) || d.HasQueries() {
		t.Errorf("dataset: %d tools, want %d", len(d.Tools), len(lib.Tools))
	}
	again, _ := importAll()
	if c := library.Diff(back, library.Merge(back, again)); !c.Empty() || c.Unchanged != len(lib.Tools) {
		t.Errorf("re-import: %v", c)
	}
	t.Logf("%d tools written, read back identical, re-imported unchanged", len(lib.Tools))
}
