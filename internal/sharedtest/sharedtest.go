// Package sharedtest finds the project's shared data (../shared beside the repository: the
// ToolLens and BFCL datasets, vocabularies) for tests, which skip when it is absent.
package sharedtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns ../shared/rel beside the repository root (the directory holding go.mod, found
// upwards from the working directory), skipping tb when the root or the path is absent.
func Dir(tb testing.TB, rel string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skip("repository root (go.mod) not found")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("%s absent: skipping", p)
	}
	return p
}
