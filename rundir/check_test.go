package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
)

// TestCheckDev: a run carved with the retriever's split passes; one carved with another seed
// (some dev queries trained on), on other data, or without run.json fails, labelled.
func TestCheckDev(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	dev, _, _, err := Carve(d, "train", 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	other, _, _, err := Carve(d, "train", 0.2, 2)
	if err != nil {
		t.Fatal(err)
	}
	run := func(sp Split, fingerprint string) string {
		dir := t.TempDir()
		if err := Create(dir, &Meta{Kind: "crossencoder", Dataset: d.Name, Fingerprint: fingerprint, Split: sp}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	same, shifted, elsewhere := run(dev, d.Fingerprint()), run(other, d.Fingerprint()), run(dev, "other")
	if err := CheckDev("-reranker", same, d, dev); err != nil {
		t.Errorf("the retriever's own split: %v", err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"other seed", shifted, "-reranker " + shifted + ": "},
		{"other data", elsewhere, "-reranker " + elsewhere + ": "},
		{"no run.json", t.TempDir(), "-reranker: "},
	} {
		err := CheckDev("-reranker", tc.path, d, dev)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want the prefix %q", tc.name, err, tc.want)
		}
	}
	if err := CheckDev("-reranker", shifted, d, dev); err == nil || !strings.Contains(err.Error(), "dev queries are training queries") {
		t.Errorf("other seed: %v", err)
	}
}

// TestFindConfig: the run directory's own file first, in the order asked, then its best
// checkpoint's.
func TestFindConfig(t *testing.T) {
	dir := t.TempDir()
	ck := checkpoints.Dir(dir, 1)
	for _, p := range []string{filepath.Join(dir, "b.json"), filepath.Join(ck, "a.json"), filepath.Join(ck, "state.json")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path  string
		files []string
		want  string
	}{
		{dir, []string{"a.json", "b.json"}, filepath.Join(dir, "b.json")},
		{dir, []string{"a.json"}, filepath.Join(ck, "a.json")},
		{ck, []string{"a.json", "b.json"}, filepath.Join(ck, "a.json")},
		{dir, []string{"c.json"}, ""},
		{filepath.Join(dir, "absent"), []string{"a.json"}, ""},
	} {
		got, ok := FindConfig(tc.path, tc.files...)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("FindConfig(%s, %v) = %q, %v; want %q", tc.path, tc.files, got, ok, tc.want)
		}
	}
}
