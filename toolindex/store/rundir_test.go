package store

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/toolindex"
)

// TestOpenRunDir: serving a training run instead of its exported index says to export it
// first, with the command; a directory that is neither still gets the missing manifest.
func TestOpenRunDir(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(t.TempDir(), "run")
	if err := exporttest.WriteRun(run, exporttest.Options{}, be, 3); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{run, "this is a training run, not an exported index: export it first with `toolret export -run " + run + " -format index -out OUT`"},
		{t.TempDir(), "manifest.json: no such file"},
	} {
		_, err := Open(tc.dir, 0, toolindex.WithBackend(be))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s): %v, want %q", tc.dir, err, tc.want)
		}
		_, err = toolindex.Load(tc.dir, toolindex.WithBackend(be))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("retriever.Load(%s): %v, want %q", tc.dir, err, tc.want)
		}
	}
}
