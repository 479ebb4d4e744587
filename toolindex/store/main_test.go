package store

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/toolindex"
)

// baseIndex is a tiny random bi-encoder's index of the embedded dataset, built once; tests
// work on copies (newIndex).
var baseIndex = sync.OnceValues(func() (string, error) {
	be, err := backend.Open("go")
	if err != nil {
		return "", err
	}
	m, err := exporttest.BiEncoder(exporttest.Options{}, be, 1)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "toolret-store-test-")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(tmp, "index")
	_, err = export.Export(m, export.Options{Format: export.FormatIndex, Out: dir})
	return dir, err
})

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := baseIndex(); err == nil {
		os.RemoveAll(filepath.Dir(dir))
	}
	os.Exit(code)
}

// newIndex returns a fresh copy of the tiny index.
func newIndex(t testing.TB) string {
	t.Helper()
	src, err := baseIndex()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "index")
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func openStore(t testing.TB, dir string, compactEvery int) *Store {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, compactEvery, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
