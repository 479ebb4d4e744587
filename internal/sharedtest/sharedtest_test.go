package sharedtest

import (
	"path/filepath"
	"testing"
)

// TestDir: an existing shared path is found beside the repository root; a missing one skips
// (checked in a subtest, whose skip does not end this test).
func TestDir(t *testing.T) {
	var skipped bool
	t.Run("missing", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Dir(t, "no/such/path")
		t.Error("Dir returned for a missing path")
	})
	if !skipped {
		t.Error("a missing shared path did not skip the test")
	}
	p := Dir(t, ".")
	if filepath.Base(p) != "shared" {
		t.Errorf("Dir(.) = %s, want a directory named shared", p)
	}
}
