package hubcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
)

// TestImportONNX installs a tiny PyTorch-style BERT export under a hub id, which `hub path`
// then resolves offline to a snapshot that loads; bad command lines are refused by name.
func TestImportONNX(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv("HF_HUB_CACHE", filepath.Join(dir, "cache"))
	t.Setenv("HF_HUB_OFFLINE", "1")
	src := filepath.Join(dir, "src")
	if err := exporttest.WriteHF(src, exporttest.Options{Layers: 2}, be, 5); err != nil {
		t.Fatal(err)
	}
	b, err := exporttest.TorchONNX(src, exporttest.TorchONNXOptions{HeadSize: 8, Eps: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	graph := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(graph, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(src, "tokenizer.json")
	var out, errOut bytes.Buffer
	if err := run([]string{"import-onnx", "-repo", "org/tiny", "-pooling", "mean", "-normalize", "-query-prompt", "query: ", graph, tok}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	snap := strings.TrimSpace(out.String())
	out.Reset()
	if err := run([]string{"path", "org/tiny"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != snap {
		t.Errorf("hub path: %s, import printed %s", got, snap)
	}
	m, err := export.LoadHF(snap, be)
	if err != nil {
		t.Fatal(err)
	}
	if m.QueryPrompt != "query: " {
		t.Errorf("query prompt %q", m.QueryPrompt)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import-onnx", "-pooling", "cls", graph, tok}, "give -repo"},
		{[]string{"import-onnx", "-repo", "org/tiny", "-pooling", "cls", graph}, "give -repo, the .onnx file and its tokenizer.json"},
		{[]string{"import-onnx", "-repo", "not-a-hub-id", "-pooling", "cls", graph, tok}, "not a hub id"},
		{[]string{"import-onnx", "-repo", "org/x@main", "-pooling", "cls", graph, tok}, "not a hub id"},
		{[]string{"import-onnx", "-repo", "org/x", "-pooling", "max", graph, tok}, "want cls or mean"},
		{[]string{"import-onnx", "-repo", "org/x", "-pooling", "cls", tok, tok}, "not an ONNX model"},
	} {
		err := run(c.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("hub %s: %v, want an error containing %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}
