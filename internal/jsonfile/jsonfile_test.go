package jsonfile

import (
	"errors"
	"io/fs"
	"math"
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

// TestWriteLines: WriteLines writes one compact value per line without HTML escaping, and a
// write that fails half-way (a value JSON cannot encode) leaves the old file as it was, with
// no temporary file beside it.
func TestWriteLines(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tools.jsonl")
	if err := WriteLines(p, []config{{Name: "a<b>&c", Size: 1}, {Name: "d", Size: 2}}); err != nil {
		t.Fatal(err)
	}
	want := "{\"name\":\"a<b>&c\",\"size\":1}\n{\"name\":\"d\",\"size\":2}\n"
	b, err := os.ReadFile(p)
	if err != nil || string(b) != want {
		t.Fatalf("wrote %q (%v), want %q", b, err, want)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode: %v %v", fi.Mode(), err)
	}
	for _, c := range []struct {
		name string
		vs   []any
		want string
	}{
		{"unencodable second line", []any{map[string]int{"x": 1}, math.NaN()}, "line 2"},
		{"unencodable first line", []any{make(chan int)}, "line 1"},
	} {
		err := WriteLines(p, c.vs)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s and %q", c.name, err, p, c.want)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s: the file now holds %q (%v), want the old %q", c.name, b, err, want)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want tools.jsonl alone", names)
	}
}
