package exporttest

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
)

// baseIndex is a tiny random bi-encoder's index of the embedded dataset (BiEncoder, seed 1,
// go backend), built once per test binary in a temporary directory.
var baseIndex = sync.OnceValues(func() (string, error) {
	be, err := backend.Open("go")
	if err != nil {
		return "", err
	}
	m, err := BiEncoder(Options{}, be, 1)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "toolret-test-index-")
	if err != nil {
		return "", err
	}
	indexTmp.Store(tmp)
	dir := filepath.Join(tmp, "index")
	_, err = export.Export(m, export.Options{Format: export.FormatIndex, Out: dir})
	return dir, err
})

// NewIndex returns a fresh copy, in t's temporary directory, of the tiny index built once
// per test binary: tests may change it (updates, compaction) without affecting each other.
func NewIndex(t testing.TB) string {
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

// indexTmp is the temporary directory baseIndex made, once it made one.
var indexTmp atomic.Value

// RemoveIndex removes the index NewIndex built, if it did: call it from TestMain after m.Run.
func RemoveIndex() {
	if tmp, ok := indexTmp.Load().(string); ok {
		os.RemoveAll(tmp)
	}
}
