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

func TestTempDirMkdirAll(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref")
	if err := os.Mkdir(ref, 0o755); err != nil {
		t.Fatal(err)
	}
	want, _ := os.Stat(ref)
	tmp, err := TempDir(dir, ".x.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(tmp); fi.Mode().Perm() != want.Mode().Perm() || !strings.HasPrefix(filepath.Base(tmp), ".x.tmp-") {
		t.Errorf("TempDir %s: mode %v, want %v", tmp, fi.Mode().Perm(), want.Mode().Perm())
	}
	made, err := MkdirAll(filepath.Join(dir, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	if len(made) != 3 || made[0] != filepath.Join(dir, "a") {
		t.Fatalf("made %q, want a, a/b, a/b/c", made)
	}
	if again, err := MkdirAll(filepath.Join(dir, "a", "b")); err != nil || len(again) != 0 {
		t.Errorf("existing: made %q, %v", again, err)
	}
	os.WriteFile(filepath.Join(dir, "a", "keep"), nil, 0o644)
	RemoveCreated(made)
	if _, err := os.Stat(filepath.Join(dir, "a", "b")); err == nil {
		t.Error("RemoveCreated left a/b")
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "keep")); err != nil {
		t.Error("RemoveCreated removed a non-empty directory")
	}
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	if _, err := MkdirAll(filepath.Join(dir, "f", "x")); err == nil {
		t.Error("MkdirAll under a file succeeded")
	}
}

func TestCopyTree(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	files := map[string]string{"a.txt": "alpha", "sub/b.bin": "\x00beta", "sub/deeper/c": ""}
	for name, body := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := CopyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(b) != body {
			t.Errorf("%s: %q, %v; want %q", name, b, err, body)
		}
	}
	if err := CopyTree(filepath.Join(src, "missing"), dst); err == nil {
		t.Error("copying a missing directory: no error")
	}
}
