package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
)

func TestCarveApply(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		frac float64
		seed int64
	}{{0.1, 1}, {0.3, 7}, {0.85, 3}} {
		sp, train, dev, err := Carve(d, "train", tc.frac, tc.seed)
		if err != nil {
			t.Fatal(err)
		}
		wantTrain, wantDev, _ := d.CarveDev("train", tc.frac, tc.seed)
		if !slices.Equal(dev.Queries, wantDev.Queries) || !slices.Equal(train.Queries, wantTrain.Queries) {
			t.Fatalf("Carve(%v, %d) differs from CarveDev", tc.frac, tc.seed)
		}
		dir := t.TempDir()
		if err := Create(dir, &Meta{Kind: "biencoder", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp}); err != nil {
			t.Fatal(err)
		}
		gotTrain, gotDev, m, err := Splits(dir, d)
		if err != nil {
			t.Fatal(err)
		}
		if m.Format != Format || !slices.Equal(gotDev.Queries, dev.Queries) || !slices.Equal(gotTrain.Queries, train.Queries) {
			t.Errorf("Splits(%v, %d): dev %d train %d queries, want %d and %d", tc.frac, tc.seed, len(gotDev.Queries), len(gotTrain.Queries), len(dev.Queries), len(train.Queries))
		}
		for _, q := range gotDev.Queries {
			if !slices.Equal(gotDev.Relevant[q], dev.Relevant[q]) || gotDev.Scene[q] != dev.Scene[q] {
				t.Fatalf("query %d: relevant tools or scene differ", q)
			}
		}
	}
}

func TestSplitErrors(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	sp, _, _, err := Carve(d, "train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	test := d.Splits["test"].Queries[0]
	for _, tc := range []struct {
		name string
		edit func(s *Split)
		want string
	}{
		{"unknown id", func(s *Split) { s.DevIDs = append(s.DevIDs, "no-such-query") }, `query id "no-such-query" is not in dataset`},
		{"test query", func(s *Split) { s.DevIDs = append(s.DevIDs, d.Queries[test].ID) }, "has no relevant tool in split"},
		{"empty", func(s *Split) { s.DevIDs = nil }, "no dev query recorded"},
		{"unknown split", func(s *Split) { s.From = "nope" }, `no split "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sp
			s.DevIDs = slices.Clone(sp.DevIDs)
			tc.edit(&s)
			if _, _, err := s.Apply(d); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
	dir := t.TempDir()
	if err := Create(dir, &Meta{Kind: "biencoder", Fingerprint: "other", Split: sp}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Splits(dir, d); err == nil || !strings.Contains(err.Error(), "other data") {
		t.Errorf("other data: %v", err)
	}
	old := t.TempDir()
	if _, err := Read(old); !errors.Is(err, ErrNoMeta) || !strings.Contains(err.Error(), "train migrate -run "+old) {
		t.Errorf("old run: %v", err)
	}
	if err := os.WriteFile(filepath.Join(old, MetaFile), []byte(`{"format": 1, "kind": "biencoder"`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(old); err == nil || !strings.Contains(err.Error(), MetaFile) {
		t.Errorf("truncated run.json: %v", err)
	}
	if err := os.WriteFile(filepath.Join(old, MetaFile), []byte(`{"format": 9, "kind": "biencoder"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(old); err == nil || !strings.Contains(err.Error(), "format 9") {
		t.Errorf("future format: %v", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "f.json")
	for _, content := range []string{"first", "second, longer"} {
		if err := WriteFile(p, []byte(content)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != content {
			t.Fatalf("read %q, %v; want %q", b, err, content)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	// A path whose directory cannot be created is an error naming the path.
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	if err := WriteFile(filepath.Join(blocker, "x.json"), nil); err == nil || !strings.Contains(err.Error(), "x.json") {
		t.Errorf("want error naming the path, got %v", err)
	}
}
