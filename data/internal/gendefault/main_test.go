package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCommittedFilesUpToDate regenerates the dataset and compares it with data/default, so the
// committed files always match the generator and its default seed.
func TestCommittedFilesUpToDate(t *testing.T) {
	dir := t.TempDir()
	*out = dir
	if err := run(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv",
		"scene_tool.txt", "query_scene_train.txt", "query_scene_test.txt"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("..", "..", "default", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("data/default/%s is stale: run go run ./data/internal/gendefault -out data/default", name)
		}
	}
}
