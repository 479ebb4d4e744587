package evalcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/datatest"
)

// TestSaveRunWithinLibraries: on a multi-source dataset -save-run writes what the metrics
// read, each query ranked among its own library's tools (it wrote every library's before).
func TestSaveRunWithinLibraries(t *testing.T) {
	t.Setenv(data.DatasetPathEnv, datatest.Mix(t))
	file := filepath.Join(t.TempDir(), "bm25.trec")
	runJSON(t, map[string]string{"data": "lens,mix", "method": "bm25", "split": "train", "save-run": file, "k": "10"})
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lib := func(id string) string { // lens:q3, lens:2 -> lens; mix:a3, mix:a/x0 -> mix:a
		ds, rest, _ := strings.Cut(id, ":")
		if ds == "lens" {
			return ds
		}
		return ds + ":" + rest[:1]
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 50 {
		t.Fatalf("%d lines in the run", len(lines))
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if lib(f[0]) != lib(f[2]) {
			t.Fatalf("query %s ranked tool %s of another library: %q", f[0], f[2], l)
		}
	}
}
