package store

import (
	"os"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/toolindex"
)

func TestMain(m *testing.M) {
	code := m.Run()
	exporttest.RemoveIndex()
	os.Exit(code)
}

// newIndex returns a fresh copy of the tiny test index (exporttest.NewIndex).
func newIndex(t testing.TB) string { return exporttest.NewIndex(t) }

// openStore opens the store of dir on the go backend.
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
