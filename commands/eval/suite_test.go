package evalcmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSuiteSet writes a BEIR test set at dir whose tools are texts and whose query i is
// relevant to tool i.
func writeSuiteSet(t *testing.T, dir string, texts, queries []string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		t.Fatal(err)
	}
	var corpus, qs strings.Builder
	qrels := "query-id\tcorpus-id\tscore\n"
	for i, s := range texts {
		fmt.Fprintf(&corpus, "{\"_id\": \"t%d\", \"text\": %q}\n", i, s)
	}
	for i, s := range queries {
		fmt.Fprintf(&qs, "{\"_id\": \"q%d\", \"text\": %q}\n", i, s)
		qrels += fmt.Sprintf("q%d\tt%d\t1\n", i, i)
	}
	for name, s := range map[string]string{"corpus.jsonl": corpus.String(), "queries.jsonl": qs.String(), "qrels/test.tsv": qrels} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSuiteCommand: -suite with -suite-dir prints one table with a row per set and the mean,
// and -json the suite's result: BM25, then the fusion -runs gives.
func TestSuiteCommand(t *testing.T) {
	dir := t.TempDir()
	texts := []string{"weather forecast for a city", "book a flight", "send an email", "convert currency"}
	writeSuiteSet(t, filepath.Join(dir, "bfcl"), texts, []string{"weather in paris", "flight to rome", "email my boss", "dollars to euros"})
	writeSuiteSet(t, filepath.Join(dir, "zeroshot", "tau_bench"), texts[:3], []string{"city forecast", "book it", "mail"})
	kv := map[string]string{"suite": "bfcl,tau_bench", "suite-dir": dir, "method": "fusion", "runs": "bm25,bm25", "fusion": "minmax", "weight": "0.5"}
	o := parseKV(t, kv)
	var out bytes.Buffer
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| set | queries | tools | bm25 | minmax 0.5,0.5(bm25 + bm25) |", "| bfcl | 4 | 4 |", "| tau_bench | 3 | 3 |", "| mean |", "| set | R@1 | R@5 | R@10 | N@5 |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	kv["json"] = "true"
	var res struct {
		Sets    []string
		Systems []struct {
			Name string
			Rows []struct {
				Set     string
				Metrics map[string]float64
			}
			Mean map[string]float64
		}
	}
	o = parseKV(t, kv)
	out.Reset()
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("decode %q: %v", out.String(), err)
	}
	if len(res.Systems) != 2 || res.Systems[0].Name != "bm25" || len(res.Systems[1].Rows) != 2 {
		t.Fatalf("result %+v: want bm25 and the fusion on two sets", res)
	}
	for _, s := range res.Systems {
		mean := (s.Rows[0].Metrics["recall@5"] + s.Rows[1].Metrics["recall@5"]) / 2
		if d := s.Mean["recall@5"] - mean; d > 0.01 || d < -0.01 {
			t.Errorf("%s: mean R@5 %.2f, rows' mean %.2f", s.Name, s.Mean["recall@5"], mean)
		}
	}
}

// TestSuiteFlags: flags that do not apply to -suite, -suite's own flags without it, an
// unknown set and dev-tuned fusion weights are refused.
func TestSuiteFlags(t *testing.T) {
	for _, c := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"suite": "zeroshot", "data": "x", "save-run": "f"}, "-data, -save-run do not apply"},
		{map[string]string{"suite-dir": "x"}, "-suite-dir applies to -suite"},
		{map[string]string{"no-start": "true"}, "-no-start applies to -suite"},
		{map[string]string{"suite": "bfcl,toollens"}, `unknown set "toollens"`},
		{map[string]string{"suite": "zeroshot", "method": "fusion", "runs": "bm25,bm25", "fusion": "zscore"}, "no dev split"},
		{map[string]string{"suite": "zeroshot", "method": "rerank"}, "not -method rerank"},
	} {
		o, err := parse(args(c.kv), io.Discard)
		if err == nil {
			err = run(o, io.Discard)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.kv, err, c.want)
		}
	}
}
