package exporttest

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/internal/atomicfile"
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
	err = atomicfile.CopyTree(src, dst)
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
