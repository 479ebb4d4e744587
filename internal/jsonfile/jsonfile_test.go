package jsonfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type config struct {
	Name string `json:"name"`
	Size int    `json:"size"`
}

func TestWriteRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "c.json")
	if err := Write(p, config{Name: "a", Size: 3}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"name\": \"a\",\n  \"size\": 3\n}\n"; string(b) != want {
		t.Fatalf("wrote %q, want %q", b, want)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode: %v %v", fi.Mode(), err)
	}
	c, err := Load(p, config{Size: 7})
	if err != nil || c != (config{Name: "a", Size: 3}) {
		t.Fatalf("Load = %+v, %v", c, err)
	}
	if err := os.WriteFile(p, []byte(`{"name": "b"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err = Load(p, config{Size: 7}); err != nil || c != (config{Name: "b", Size: 7}) {
		t.Fatalf("Load with default = %+v, %v", c, err)
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load[config](filepath.Join(dir, "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	for _, tc := range []struct{ content, want string }{
		{"{\n  \"name\": \"a\",\n  \"size\": \"x\"\n}\n", "bad.json:3:"},
		{"{\n  \"name\": \"a\",,\n}", "bad.json:2:"},
		{"", "bad.json:1:1: unexpected end"},
	} {
		p := filepath.Join(dir, "bad.json")
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load[config](p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%q) = %v, want it to contain %q", tc.content, err, tc.want)
		}
	}
}

func TestWriteUnencodable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	if err := Write(p, func() {}); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("Write(func) = %v, want an error naming %s", err, p)
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("file written after a failed encoding: %v", err)
	}
}
