package toolret_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/rundir"
)

// writeSet writes a tiny BEIR test set at dir: tools t0..t(n-1) whose texts are their words,
// and one query per entry of queries, relevant to the tools of its entry.
func writeSet(t *testing.T, dir string, tools []string, queries map[string][]int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		t.Fatal(err)
	}
	var corpus, qs, qrels strings.Builder
	for i, text := range tools {
		fmt.Fprintf(&corpus, `{"_id": "t%d", "title": "", "text": %q}`+"\n", i, text)
	}
	qrels.WriteString("query-id\tcorpus-id\tscore\n")
	n := 0
	for text, rel := range queries {
		fmt.Fprintf(&qs, `{"_id": "q%d", "text": %q}`+"\n", n, text)
		for _, r := range rel {
			fmt.Fprintf(&qrels, "q%d\tt%d\t1\n", n, r)
		}
		n++
	}
	for name, s := range map[string]string{"corpus.jsonl": corpus.String(), "queries.jsonl": qs.String(), "qrels/test.tsv": qrels.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tinySuite writes two tiny sets, bfcl and apibank, under a temporary directory and returns it.
func tinySuite(t *testing.T) string {
	dir := t.TempDir()
	tools := []string{"get the weather forecast for a city", "book a flight ticket", "send an email message", "convert currency amounts", "search hotel rooms"}
	writeSet(t, filepath.Join(dir, "bfcl"), tools, map[string][]int{
		"what is the weather in paris": {0}, "book me a flight and a hotel": {1, 4}, "email my boss": {2}, "convert 5 dollars": {3},
	})
	writeSet(t, filepath.Join(dir, "zeroshot", "apibank"), tools[1:], map[string][]int{
		"send a message": {1}, "hotel rooms in rome": {3}, "currency": {2}, "ticket for a flight tomorrow": {0},
	})
	return dir
}

// TestSuite: BM25 through Suite gives per set Evaluate's figures and their unweighted mean;
// a model, a fusion and a run with its start model run through the same path.
func TestSuite(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir := tinySuite(t)
	model, run := filepath.Join(dir, "model"), filepath.Join(dir, "run")
	if err := exporttest.WriteHF(model, exporttest.Options{}, be, 1); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteRun(run, exporttest.Options{}, be, 2); err != nil {
		t.Fatal(err)
	}
	cfg, err := json.Marshal(map[string]any{"parent": map[string]any{"init": model}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rundir.Create(run, &rundir.Meta{Kind: "biencoder", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	sets := []string{"bfcl", "apibank"}
	paths := []string{filepath.Join(dir, "bfcl"), filepath.Join(dir, "zeroshot", "apibank")}
	fuse := []string{"bm25", "model:" + model}
	res, err := toolret.Suite(ctx, toolret.SuiteConfig{Dir: dir, Sets: sets, Backend: "go", Systems: []toolret.SuiteSystem{
		{Fuse: fuse},
		{Run: run},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, note string
		eval       toolret.EvalConfig
	}{
		{"bm25", "", toolret.EvalConfig{}},
		{"rrf(bm25 + model:" + model + ")", "", toolret.EvalConfig{Fuse: fuse}},
		{"model:" + model, "start model of run:" + run, toolret.EvalConfig{Model: model}},
		{"run:" + run, "", toolret.EvalConfig{Run: run}},
	}
	if len(res.Systems) != len(cases) {
		var names []string
		for _, s := range res.Systems {
			names = append(names, s.Name)
		}
		t.Fatalf("systems %q, want %d", names, len(cases))
	}
	for i, c := range cases {
		got := res.Systems[i]
		if got.Name != c.name || got.Note != c.note {
			t.Errorf("system %d: %q (%q), want %q (%q)", i, got.Name, got.Note, c.name, c.note)
			continue
		}
		for _, k := range []int{1, 5, 10} {
			sum := 0.0
			for j, p := range paths {
				e := c.eval
				e.Data, e.Backend, e.Cutoffs = p, "go", []int{1, 5, 10}
				rep, err := toolret.Evaluate(ctx, e)
				if err != nil {
					t.Fatalf("%s on %s: %v", c.name, p, err)
				}
				if g, w := got.Rows[j].Result.Recall[k], rep.Overall.Recall[k]; g != w {
					t.Errorf("%s on %s: R@%d %.4f, Evaluate's %.4f", c.name, sets[j], k, g, w)
				}
				sum += rep.Overall.Recall[k]
			}
			if g, w := got.Mean.Recall[k], sum/float64(len(paths)); math.Abs(g-w) > 1e-9 {
				t.Errorf("%s: mean R@%d %.4f, want %.4f", c.name, k, g, w)
			}
		}
	}
	out := res.String()
	for _, want := range []string{"| set | queries | tools | bm25 |", "| bfcl | 4 | 5 |", "| apibank | 4 | 4 |", "| mean |", "| set | R@1 | R@5 | R@10 | N@5 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if _, err := json.Marshal(res); err != nil {
		t.Error(err)
	}

	// NoStart leaves the start model out.
	res, err = toolret.Suite(ctx, toolret.SuiteConfig{Dir: dir, Sets: sets[:1], Backend: "go", NoStart: true, Systems: []toolret.SuiteSystem{{Run: run}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Systems) != 2 || res.Systems[1].Name != "run:"+run {
		t.Errorf("NoStart: %d systems, want bm25 and the run", len(res.Systems))
	}
}

// TestSuiteRefuses: an unknown set is refused naming the known ones, a set that does not
// load is an error naming it, and a system Evaluate refuses is refused before any evaluation.
func TestSuiteRefuses(t *testing.T) {
	dir := tinySuite(t)
	for _, c := range []struct {
		name string
		cfg  toolret.SuiteConfig
		want []string
	}{
		{"unknown set", toolret.SuiteConfig{Sets: []string{"bfcl", "toollens"}}, []string{`unknown set "toollens"`, strings.Join(toolret.ZeroShotSets, ", ")}},
		{"missing set", toolret.SuiteConfig{Sets: []string{"bfcl", "restbench"}}, []string{"set restbench", filepath.Join("zeroshot", "restbench")}},
		{"bad fusion", toolret.SuiteConfig{Systems: []toolret.SuiteSystem{{Fuse: []string{"bm25", "tfidf"}}}}, []string{`Fuse entry "tfidf"`}},
		{"weights without interpolation", toolret.SuiteConfig{Systems: []toolret.SuiteSystem{{Fuse: []string{"bm25", "bm25"}, FusionWeights: []float64{1, 1}}}}, []string{"not rrf"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Dir = dir
			_, err := toolret.Suite(context.Background(), c.cfg)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestSuiteZeroShotBM25 runs BM25 on the seven zero-shot sets of ../shared/datasets and
// checks R@5 against the published figures (../shared/README.md).
func TestSuiteZeroShotBM25(t *testing.T) {
	dir := filepath.Join("..", "shared", "datasets")
	if _, err := os.Stat(filepath.Join(dir, "zeroshot")); err != nil {
		t.Skipf("the zero-shot sets are absent: %v", err)
	}
	res, err := toolret.Suite(context.Background(), toolret.SuiteConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"bfcl": 79.01, "toolalpaca": 86.84, "apibank": 64.56, "restbench": 39.97, "seal_tools": 79.30, "gorilla_apibench": 15.84, "tau_bench": 36.11}
	bm25 := res.Systems[0]
	if len(bm25.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(bm25.Rows), len(want))
	}
	for _, r := range bm25.Rows {
		if got := r.Result.Recall[5]; math.Abs(got-want[r.Set]) > 0.006 {
			t.Errorf("BM25 on %s: R@5 %.2f, published %.2f", r.Set, got, want[r.Set])
		}
	}
	if got := bm25.Mean.Recall[5]; math.Abs(got-57.38) > 0.006 {
		t.Errorf("BM25 mean R@5 %.2f, published 57.38", got)
	}
}
