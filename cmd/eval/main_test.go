package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"strings"
	"testing"
)

// setFlags sets flags for one test and restores their previous values afterwards.
func setFlags(t *testing.T, kv map[string]string) {
	t.Helper()
	for k, v := range kv {
		f := flag.Lookup(k)
		if f == nil {
			t.Fatalf("no flag -%s", k)
		}
		old := f.Value.String()
		if err := flag.Set(k, v); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { flag.Set(k, old) })
	}
}

func TestJSONOnDefaultDataset(t *testing.T) {
	setFlags(t, map[string]string{"json": "true", "k": "3,5", "subsets": "true"})
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&out)
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode %q: %v", out.String(), err)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value in output")
	}
	for _, k := range []string{"recall@3", "recall@5", "ndcg@3", "comp@5", "subsets", "tool_recall"} {
		if _, ok := m[k]; !ok {
			t.Errorf("output lacks %q: %v", k, m)
		}
	}
	if r, _ := m["recall@5"].(float64); r <= 0 || r > 100 {
		t.Errorf("recall@5 = %v, want a percentage > 0 for BM25 on the default dataset", m["recall@5"])
	}
	if _, ok := m["recall@1"]; ok {
		t.Errorf("recall@1 reported although -k 3,5")
	}
}

func TestTable(t *testing.T) {
	setFlags(t, map[string]string{"k": "1,10"})
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"R@1", "N@10", "C@10", "all"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		flags map[string]string
		want  string
	}{
		{map[string]string{"k": "3,x"}, "positive integers"},
		{map[string]string{"k": "0"}, "positive integers"},
		{map[string]string{"method": "nope"}, `unknown -method "nope"`},
		{map[string]string{"split": "nope"}, "nope"},
		{map[string]string{"data": "/nonexistent/dir"}, "/nonexistent/dir"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			setFlags(t, tc.flags)
			err := run(&bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
