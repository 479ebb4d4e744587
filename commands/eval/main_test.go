package evalcmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
)

// args turns flags (name -> value) into a sorted command line.
func args(kv map[string]string) []string {
	var out []string
	for k, v := range kv {
		out = append(out, fmt.Sprintf("-%s=%s", k, v))
	}
	sort.Strings(out)
	return out
}

// parseKV parses flags given as name -> value.
func parseKV(t *testing.T, kv map[string]string) *options {
	t.Helper()
	o, err := parse(args(kv), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// runOpts runs eval with o and decodes its -json output.
func runOpts(t *testing.T, o *options) map[string]any {
	t.Helper()
	o.asJSON = true
	var out bytes.Buffer
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("decode %q: %v", out.String(), err)
	}
	return m
}

// runJSON runs eval with flags kv and decodes its -json output.
func runJSON(t *testing.T, kv map[string]string) map[string]any {
	t.Helper()
	return runOpts(t, parseKV(t, kv))
}

// runErr runs eval with flags kv (parsing included) and returns its error.
func runErr(kv map[string]string) error {
	o, err := parse(args(kv), io.Discard)
	if err != nil {
		return err
	}
	return run(o, io.Discard)
}

func TestJSONOnDefaultDataset(t *testing.T) {
	o := parseKV(t, map[string]string{"json": "true", "cutoffs": "3,5", "subsets": "true"})
	var out bytes.Buffer
	if err := run(o, &out); err != nil {
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
		t.Errorf("recall@1 reported although -cutoffs 3,5")
	}
}

func TestTable(t *testing.T) {
	var out bytes.Buffer
	if err := run(parseKV(t, map[string]string{"cutoffs": "1,10"}), &out); err != nil {
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
		{map[string]string{"cutoffs": "3,x"}, `-cutoffs "3,x"`},
		{map[string]string{"cutoffs": "0"}, "not a positive integer"},
		{map[string]string{"k": "0"}, "-k 0"},     // -k is the depth of saved and fused rankings; cutoffs are -cutoffs
		{map[string]string{"dev": "0.2"}, "-dev"}, // rerank reads the retriever's recorded dev split
		{map[string]string{"m": "5"}, "-m"},
		{map[string]string{"n": "5"}, "-n"},
		{map[string]string{"depth": "0"}, "-depth 0"},
		{map[string]string{"per-component": "-1"}, "-per-component -1"},
		{map[string]string{"bm25-b": "1.5"}, "-bm25-b"},
		{map[string]string{"tool-vectors": "mean"}, "-tool-vectors"},
		{map[string]string{"method": "nope"}, `unknown -method "nope"`},
		{map[string]string{"split": "nope"}, "nope"},
		{map[string]string{"data": "/nonexistent/dir"}, "/nonexistent/dir"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			err := runErr(tc.flags)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestBM25Params checks the BM25 flags reach the ranker: other parameters give other metrics.
func TestBM25Params(t *testing.T) {
	def := runJSON(t, map[string]string{"cutoffs": "1,5"})
	other := runJSON(t, map[string]string{"cutoffs": "1,5", "bm25-k1": "0.2", "bm25-b": "0", "bm25-stopwords": "true"})
	if def["recall@1"] == other["recall@1"] && def["ndcg@5"] == other["ndcg@5"] {
		t.Errorf("BM25 with k1 0.2, b 0 and stop words gives the defaults' metrics %v", def)
	}
}
