// Package datatest writes small BEIR datasets for tests.
package datatest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Write writes a BEIR dataset to dir: tools with the given ids (text "tool ID does things"),
// and per split one query per entry "QUERY:TOOL" (several relevant tools: "QUERY:T1|T2"; the
// query's text "query QUERY").
func Write(t testing.TB, dir string, tools []string, splits map[string][]string) {
	t.Helper()
	var corpus, queries strings.Builder
	for _, id := range tools {
		fmt.Fprintf(&corpus, "{\"_id\": %q, \"title\": %q, \"text\": \"tool %s does things\"}\n", id, id, id)
	}
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, pairs := range splits {
		var q strings.Builder
		q.WriteString("query-id\tcorpus-id\tscore\n")
		for _, p := range pairs {
			qid, ts, _ := strings.Cut(p, ":")
			fmt.Fprintf(&queries, "{\"_id\": %q, \"text\": \"query %s\"}\n", qid, qid)
			for _, tid := range strings.Split(ts, "|") {
				fmt.Fprintf(&q, "%s\t%s\t1\n", qid, tid)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "qrels", name+".tsv"), []byte(q.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for f, s := range map[string]string{"corpus.jsonl": corpus.String(), "queries.jsonl": queries.String()} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Mix writes three datasets under a new temporary directory and returns it: "lens" (tools
// 1-4; 20 train queries, 2 test queries), "mix" (tool ids with sources a and b, b with twice
// a's pairs; 30 train queries, no test split; a sources.tsv), "servers" (tool ids prefixed by
// server, no sources.tsv: one library) and "notrain" (a test split only).
func Mix(t testing.TB) string {
	root := t.TempDir()
	var lens []string
	for i := range 20 {
		lens = append(lens, fmt.Sprintf("q%d:%d", i, i%4+1))
	}
	Write(t, filepath.Join(root, "lens"), []string{"1", "2", "3", "4"},
		map[string][]string{"train": lens, "test": {"t1:1|2", "t2:3"}})
	var mix []string
	for i := range 30 {
		if i%3 == 0 {
			mix = append(mix, fmt.Sprintf("a%d:a/x%d", i, i%2))
		} else {
			mix = append(mix, fmt.Sprintf("b%d:b/y%d", i, i%3))
		}
	}
	Write(t, filepath.Join(root, "mix"), []string{"a/x0", "a/x1", "b/y0", "b/y1", "b/y2"}, map[string][]string{"train": mix})
	if err := os.WriteFile(filepath.Join(root, "mix", "sources.tsv"), []byte("source\ta\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Write(t, filepath.Join(root, "servers"), []string{"gh/a", "gh/b", "fs/c"}, map[string][]string{"train": {"s1:gh/a", "s2:fs/c", "s3:gh/b"}})
	Write(t, filepath.Join(root, "notrain"), []string{"n1", "n2"}, map[string][]string{"test": {"u1:n1"}})
	return root
}
