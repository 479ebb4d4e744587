package hub

import (
	"crypto/sha1"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseID(t *testing.T) {
	tests := []struct {
		in   string
		want ID
		ok   bool
	}{
		{"org/name", ID{"org/name", ""}, true},
		{"BAAI/bge-small-en-v1.5", ID{"BAAI/bge-small-en-v1.5", ""}, true},
		{"sentence-transformers/all-MiniLM-L6-v2@main", ID{"sentence-transformers/all-MiniLM-L6-v2", "main"}, true},
		{"org/name@v1.0", ID{"org/name", "v1.0"}, true},
		{"org/name@refs/pr/1", ID{"org/name", "refs/pr/1"}, true},
		{"org/my_model.v2@" + commitOf("x"), ID{"org/my_model.v2", commitOf("x")}, true},
		{"", ID{}, false},
		{"name", ID{}, false},
		{"/org/name", ID{}, false},
		{"org/", ID{}, false},
		{"/name", ID{}, false},
		{"org/name/extra", ID{}, false},
		{"./org/name", ID{}, false},
		{"../name", ID{}, false},
		{".org/name", ID{}, false},
		{"org/.name", ID{}, false},
		{"org/name.", ID{}, false},
		{"org/-name", ID{}, false},
		{"org/na..me", ID{}, false},
		{"org/na--me", ID{}, false},
		{"org/name.git", ID{}, false},
		{"org/na me", ID{}, false},
		{"org /name", ID{}, false},
		{"org/name@", ID{}, false},
		{"org/name@a b", ID{}, false},
		{"org/name@../x", ID{}, false},
		{"org/name@/x", ID{}, false},
		{"org/name@x/", ID{}, false},
		{"org/name@a//b", ID{}, false},
		{"org/name@a@b", ID{}, false},
		{"org/" + strings.Repeat("n", 97), ID{}, false},
		{"models/bert-base", ID{"models/bert-base", ""}, true},
	}
	for _, tt := range tests {
		got, ok := ParseID(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseID(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		if ok && got.String() != tt.in {
			t.Errorf("ParseID(%q).String() = %q", tt.in, got.String())
		}
	}
}

func TestCacheDir(t *testing.T) {
	tests := []struct {
		hubCache, hfHome, xdg, home string
		want                        string
	}{
		{"/c/hub", "/h", "/x", "/home/u", "/c/hub"},
		{"", "/h", "/x", "/home/u", "/h/hub"},
		{"", "", "/x", "/home/u", "/x/huggingface/hub"},
		{"", "", "", "/home/u", "/home/u/.cache/huggingface/hub"},
	}
	for _, tt := range tests {
		t.Setenv("HF_HUB_CACHE", tt.hubCache)
		t.Setenv("HF_HOME", tt.hfHome)
		t.Setenv("XDG_CACHE_HOME", tt.xdg)
		t.Setenv("HOME", tt.home)
		if got := CacheDir(); got != tt.want {
			t.Errorf("CacheDir() with HF_HUB_CACHE=%q HF_HOME=%q XDG_CACHE_HOME=%q HOME=%q = %q, want %q",
				tt.hubCache, tt.hfHome, tt.xdg, tt.home, got, tt.want)
		}
	}
}

func TestDigest(t *testing.T) {
	sha, git, n, err := digest(strings.NewReader("hello\n"), 6)
	if err != nil || n != 6 {
		t.Fatal(n, err)
	}
	if want := "ce013625030ba8dba906f756967f9e9ca394464a"; git != want {
		t.Errorf("git blob sha1 of %q = %s, want %s", "hello\n", git, want)
	}
	if want := "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"; sha != want {
		t.Errorf("sha256 of %q = %s, want %s", "hello\n", sha, want)
	}
}

func TestDefaultFiles(t *testing.T) {
	tests := []struct {
		in, want []string
	}{
		{
			[]string{".gitattributes", "config.json", "model.safetensors", "pytorch_model.bin", "tf_model.h5",
				"flax_model.msgpack", "rust_model.ot", "model.onnx", "onnx/model_quantized.onnx", "onnx/config.json",
				"openvino/openvino_model.xml", "coreml/model.mlpackage/Manifest.json", "1_Pooling/config.json", "tokenizer.json"},
			[]string{"config.json", "model.safetensors", "1_Pooling/config.json", "tokenizer.json"},
		},
		{
			[]string{"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
				"model-00002-of-00002.safetensors", "pytorch_model-00001-of-00002.bin", "pytorch_model.bin.index.json"},
			[]string{"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
				"model-00002-of-00002.safetensors"},
		},
		{
			[]string{".gitattributes", "config.json", "pytorch_model.bin", "onnx/model.onnx"},
			[]string{"config.json", "pytorch_model.bin", "onnx/model.onnx"},
		},
	}
	for _, tt := range tests {
		if got := DefaultFiles(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("DefaultFiles(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pat, name string
		want      bool
	}{
		{"*", "a/b.json", true},
		{"*.json", "config.json", true},
		{"*.json", "1_Pooling/config.json", true},
		{"*.json", "model.safetensors", false},
		{"config.json", "config.json", true},
		{"config.json", "1_Pooling/config.json", false},
		{"onnx/", "onnx/model.onnx", true},
		{"onnx/", "model.onnx", false},
		{"model-?.bin", "model-1.bin", true},
		{"model.(x)", "model.(x)", true},
	}
	for _, tt := range tests {
		if got := match(tt.pat, tt.name); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pat, tt.name, got, tt.want)
		}
	}
}

// writeTree creates the files under dir.
func writeTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for n, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// state lists the files, links and modification times under dir.
func state(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			m[rel] = "-> " + target + " " + fi.ModTime().String()
			return err
		case fi.Mode().IsRegular():
			m[rel] = fmt.Sprint(fi.Size(), " ", fi.ModTime())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestImport(t *testing.T) {
	src, cache := t.TempDir(), t.TempDir()
	big := make([]byte, lfsSize)
	files := map[string][]byte{
		"config.json":           []byte("hello\n"),
		"model.safetensors":     []byte("weights"),
		"data/big.txt":          big,
		"1_Pooling/config.json": []byte("{}"),
		".hidden":               []byte("skipped"),
		".git/HEAD":             []byte("skipped"),
	}
	writeTree(t, src, files)
	id := ID{Repo: "org/imported"}

	snap, changed, err := importDir(cache, id, "", "main", src)
	if err != nil {
		t.Fatal(err)
	}
	if !changed {
		t.Error("first import reported no change")
	}
	h := sha1.New()
	for _, n := range []string{"1_Pooling/config.json", "config.json", "data/big.txt", "model.safetensors"} {
		fmt.Fprintf(h, "%s %s\n", n, sha256Hex(files[n]))
	}
	commit := fmt.Sprintf("%x", h.Sum(nil))
	dir := filepath.Join(cache, "models--org--imported")
	if want := filepath.Join(dir, "snapshots", commit); snap != want {
		t.Fatalf("snapshot %s, want %s", snap, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "refs", "main")); err != nil || string(b) != commit {
		t.Errorf("refs/main = %q, %v; want %q", b, err, commit)
	}
	links := map[string]string{
		"config.json":           "../../blobs/ce013625030ba8dba906f756967f9e9ca394464a",
		"model.safetensors":     "../../blobs/" + sha256Hex(files["model.safetensors"]),
		"data/big.txt":          "../../../blobs/" + sha256Hex(big),
		"1_Pooling/config.json": "../../../blobs/" + gitSHA1(files["1_Pooling/config.json"]),
	}
	for n, want := range links {
		p := filepath.Join(snap, filepath.FromSlash(n))
		if got, err := os.Readlink(p); err != nil || got != want {
			t.Errorf("link %s -> %q, %v; want %q", n, got, err, want)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != string(files[n]) {
			t.Errorf("content of %s differs (%v)", n, err)
		}
	}
	for _, n := range []string{".hidden", ".git"} {
		if _, err := os.Lstat(filepath.Join(snap, n)); err == nil {
			t.Errorf("%s was imported", n)
		}
	}
	if got, err := (&Client{Cache: cache}).Local(id); err != nil || got != snap {
		t.Errorf("Local = %q, %v; want %q", got, err, snap)
	}

	before := state(t, cache)
	time.Sleep(10 * time.Millisecond)
	snap2, changed, err := importDir(cache, id, "", "main", src)
	if err != nil || snap2 != snap || changed {
		t.Errorf("second import = %q, changed %v, %v; want %q, no change", snap2, changed, err, snap)
	}
	after := state(t, cache)
	if !maps.Equal(before, after) {
		t.Errorf("second import changed the cache:\nbefore %v\nafter  %v", before, after)
	}

	// An explicit commit and another ref; importing a snapshot directory follows its links.
	c2 := commitOf("explicit")
	snap3, err := Import(cache, ID{Repo: "org/copy"}, c2, "v2", snap)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(snap3) != c2 {
		t.Errorf("snapshot %s, want commit %s", snap3, c2)
	}
	if _, err := (&Client{Cache: cache}).Local(ID{Repo: "org/copy", Revision: "v2"}); err != nil {
		t.Error(err)
	}
	if _, err := (&Client{Cache: cache}).Local(ID{Repo: "org/copy", Revision: c2}); err != nil {
		t.Error(err)
	}

	for _, tt := range []struct {
		id               ID
		commit, ref, src string
		want             string
	}{
		{ID{Repo: "bad"}, "", "main", src, "invalid model id"},
		{id, "abc", "main", src, "not 40"},
		{id, "", "../x", src, "invalid ref"},
		{id, "", "main", filepath.Join(src, "missing"), "missing"},
		{id, "", "main", t.TempDir(), "no files"},
	} {
		if _, err := Import(cache, tt.id, tt.commit, tt.ref, tt.src); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Import(%v, %q, %q, %s) = %v, want error containing %q", tt.id, tt.commit, tt.ref, tt.src, err, tt.want)
		}
	}
}
