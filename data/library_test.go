package data

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/library"
)

func TestLoadLibrary(t *testing.T) {
	dir := t.TempDir()
	lib := &library.Library{Tools: []library.Tool{
		{Name: "echo", Namespace: "everything", Description: "Echoes back the input.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"Message to echo"}},"required":["message"]}`),
			Source:      library.Source{Kind: library.KindMCP, Server: "everything"}},
		{Name: "now", Description: "The time.", InputSchema: json.RawMessage(`{"type":"object"}`), Source: library.Source{Kind: library.KindFunctions}},
	}}
	p := filepath.Join(dir, "tools.jsonl")
	if err := library.Write(p, lib); err != nil {
		t.Fatal(err)
	}
	if !IsLibraryFile(p) || IsLibraryFile(dir) {
		t.Error("IsLibraryFile")
	}
	d, err := Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "tools" || len(d.Tools) != 2 || d.HasQueries() || len(d.Queries) != 0 {
		t.Fatalf("dataset %s: %d tools, %d queries", d.Name, len(d.Tools), len(d.Queries))
	}
	// The text is the library's tool text (library.ToolText), as every path embeds it.
	want := Tool{ID: "everything.echo", Title: "everything.echo", Text: library.ToolText(lib.Tools[0]),
		ToolName: "everything", APIName: "echo"}
	if want.Text != "everything.echo: Echoes back the input. Parameters: message (string, required): Message to echo" {
		t.Errorf("library.ToolText: %q", want.Text)
	}
	if got := d.Tools[0]; got.ID != want.ID || got.Title != want.Title || got.Text != want.Text || got.Group() != "/everything" || got.APIName != want.APIName {
		t.Errorf("tool 0: %+v, want %+v", got, want)
	}
	if d.Tools[1].Group() != "id:now" || d.ToolIndex["now"] != 1 {
		t.Errorf("tool 1: %+v", d.Tools[1])
	}
	// A held-out-tool view needs judged queries.
	if _, err := Open(p, &Holdout{Fraction: 0.5, Seed: 1}); !errors.Is(err, ErrNoQueries) {
		t.Errorf("a held-out-tool view of a library: %v", err)
	}
	if _, err := d.Split("test"); !errors.Is(err, ErrNoQueries) || !strings.Contains(err.Error(), `dataset tools: no split "test": it has tools and no queries`) {
		t.Errorf("Split: %v", err)
	}
	// Errors name the library file and line.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"name":"a","input_schema":{"type":"object"},"source":{"kind":"mcp"}}`+"\n{\n"), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2: malformed JSON") {
		t.Errorf("bad library: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "x.txt")); err == nil {
		t.Error("a missing file loaded")
	}
	os.WriteFile(filepath.Join(dir, "x.txt"), []byte("x"), 0o644)
	if _, err := Load(filepath.Join(dir, "x.txt")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a .txt file: %v", err)
	}
}
