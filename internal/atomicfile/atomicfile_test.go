package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b.json")
	for _, c := range []string{"one", "two, longer", ""} {
		if err := Write(p, []byte(c)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != c {
			t.Fatalf("read %q, %v; want %q", b, err, c)
		}
		st, _ := os.Stat(p)
		if st.Mode().Perm() != 0o644 {
			t.Errorf("mode %v, want 0644", st.Mode().Perm())
		}
	}
	if es, _ := os.ReadDir(filepath.Dir(p)); len(es) != 1 {
		t.Errorf("temporary files left: %v", es)
	}
	block := filepath.Join(dir, "file")
	os.WriteFile(block, nil, 0o644)
	if err := Write(filepath.Join(block, "x"), nil); err == nil || !strings.Contains(err.Error(), "x") {
		t.Errorf("want an error naming the path, got %v", err)
	}
}
