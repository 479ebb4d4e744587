package evalcmd

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rerank"
)

// TestRerankAblations checks every row of the -ablations table (scores computed once for all
// variants) against the same variant run on its own. The cross-encoder is the oracle scorer
// (the untrained one's path is tested by TestRerankMethods): scoring the top 50 of every dev
// and test query nine times over would take minutes.
func TestRerankAblations(t *testing.T) {
	r := tinyRuns(t)
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	oracle := newOracle(d)
	base := func(kv map[string]string) map[string]string {
		out := map[string]string{"first-stage": r.be, "reranker": r.ce, "cutoffs": "1,5,10", "grid-m": "2:4,3:8"}
		for k, v := range kv {
			out[k] = v
		}
		return out
	}
	o := parseKV(t, base(map[string]string{"method": "rerank", "classifier": r.qt, "ablations": "true"}))
	o.asJSON, o.rr.scorer = true, oracle
	var out strings.Builder
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Name    string
		Params  string
		Metrics map[string]any
	}
	if err := json.Unmarshal([]byte(out.String()), &rows); err != nil {
		t.Fatalf("decode %q: %v", out.String(), err)
	}
	alone := map[string]map[string]string{
		"bi-encoder alone":        {"run": r.be},
		"Rerank-10":               {"method": "rerank-m", "depth": "10"},
		"Rerank-30":               {"method": "rerank-m", "depth": "30"},
		"Rerank-50":               {"method": "rerank-m", "depth": "50"},
		"ToolRerank":              {"method": "rerank", "classifier": r.qt, "grid": "true"},
		"- without hierarchy":     {"method": "rerank", "no-hierarchy": "true", "grid": "true"},
		"- Alg. 1 only (single)":  {"method": "rerank", "only": "single", "grid": "true"},
		"- Alg. 2 only (multi)":   {"method": "rerank", "only": "multi", "grid": "true"},
		"- oracle query type":     {"method": "rerank", "oracle-type": "true", "grid": "true"},
		"- without interpolation": {"method": "rerank", "classifier": r.qt, "grid": "true", "interpolate": "off"},
	}
	if len(rows) != len(evaluate.Variants)+1 || len(rows) != len(alone) {
		t.Fatalf("%d rows, want %d", len(rows), len(evaluate.Variants)+1)
	}
	for _, row := range rows {
		kv, ok := alone[row.Name]
		if !ok {
			t.Errorf("unexpected row %q", row.Name)
			continue
		}
		delete(alone, row.Name)
		t.Run(row.Name, func(t *testing.T) {
			o := parseKV(t, base(kv))
			o.rr.scorer = oracle
			sameMetrics(t, row.Name, row.Metrics, runOpts(t, o))
		})
	}
	for name := range alone {
		t.Errorf("no row %q", name)
	}
	err = runErr(base(map[string]string{"method": "rerank", "ablations": "true", "only": "single"}))
	if err == nil || !strings.Contains(err.Error(), "-ablations") {
		t.Errorf("-ablations with -only: %v", err)
	}
}

func TestRerankErrors(t *testing.T) {
	r := tinyRuns(t)
	for _, tc := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"method": "rerank"}, "-first-stage"},
		{map[string]string{"method": "rerank", "first-stage": r.be, "reranker": r.ce}, "-classifier"},
		{map[string]string{"method": "rerank", "first-stage": r.be, "reranker": r.ce, "only": "both"}, "-only"},
		{map[string]string{"method": "rerank", "first-stage": r.be, "reranker": r.ce, "classifier": r.mlc}, "querytype"},
		{map[string]string{"method": "rerank", "first-stage": r.be, "reranker": r.ce, "oracle-type": "true", "grid": "true", "grid-metric": "mrr"}, "mrr"},
		{map[string]string{"method": "rerank", "first-stage": r.be, "reranker": r.ce, "oracle-type": "true", "grid": "true", "grid-m": "30:10"}, "m_s < m_u"},
		{map[string]string{"method": "rerank-m", "first-stage": r.be, "reranker": r.ce, "interpolate": "sigmoid"}, "-interpolate"},
		{map[string]string{"method": "rerank-m", "first-stage": r.be, "reranker": r.ce, "weight": "1.5"}, "-weight \"1.5\""},
		{map[string]string{"method": "rerank-m", "first-stage": r.be, "reranker": r.ce, "weight": "best"}, "-weight \"best\""},
		// A reranker selected on another dev split: its training queries are in the grid's dev.
		{map[string]string{"method": "rerank-m", "first-stage": r.be, "reranker": r.otherDev}, "dev queries are training queries"},
		// A run made before run.json: the migration error.
		{map[string]string{"method": "rerank-m", "first-stage": r.noMeta, "reranker": r.ce}, "train migrate"},
		{map[string]string{"method": "rerank-m", "first-stage": r.be, "reranker": r.noMeta}, "train migrate"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			err := runErr(tc.kv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestMLCRun evaluates an mlc classifier run with -run (cmd/eval detects its kind): the run
// ranks tools by training popularity whatever the query, so its metrics are those of that
// one ranking.
func TestMLCRun(t *testing.T) {
	r := tinyRuns(t)
	f := newFixture(t, r)
	got := runJSON(t, map[string]string{"run": r.mlc, "cutoffs": "1,5,10"})
	want := make([][]int, len(f.test.Queries))
	for i := range want {
		want[i] = r.popularity
	}
	sameMetrics(t, "mlc (popularity)", got, f.metricsOf(t, f.test, want, []int{1, 5, 10}))
	if err := runErr(map[string]string{"run": r.qt}); err == nil || !strings.Contains(err.Error(), "mlc") {
		t.Fatalf("a querytype run as a ranker: %v", err)
	}
}

// TestDefaultsFlow runs the README's ToolRerank recipe with every default on a tiny dataset
// cut from the embedded one (the tools of its first 3 tool groups; 30 training and 6 test
// queries whose relevant tools are all among them): train biencoder, then crossencoder and
// classifier -kind querytype with -first-stage only (the train command is built here), then eval
// -method rerank and -ablations. Beyond not failing, the default pipeline interpolates with a
// weight tuned on the retriever's dev split, so its dev metric cannot be below the
// retriever's.
func TestDefaultsFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/train and trains models")
	}
	dir := t.TempDir()
	full, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	_, group := full.Groups()
	d := &data.Dataset{Name: "tiny", Splits: map[string]*data.Split{}}
	newIdx := map[int]int{}
	for a, g := range group {
		if g < 3 {
			newIdx[a] = len(d.Tools)
			d.Tools = append(d.Tools, full.Tools[a])
		}
	}
	for name, n := range map[string]int{"train": 30, "test": 6} {
		s := &data.Split{Name: name, Relevant: map[int][]int{}}
		for _, q := range full.Splits[name].Judged() {
			var rel []int
			for _, a := range full.Splits[name].Relevant[q] {
				if i, ok := newIdx[a]; ok {
					rel = append(rel, i)
				}
			}
			if len(rel) < len(full.Splits[name].Relevant[q]) || len(s.Queries) == n {
				continue
			}
			s.Queries = append(s.Queries, len(d.Queries))
			s.Relevant[len(d.Queries)] = rel
			d.Queries = append(d.Queries, full.Queries[q])
		}
		if len(s.Queries) < n {
			t.Fatalf("%s: %d queries on the first 3 tool groups, want %d", name, len(s.Queries), n)
		}
		d.Splits[name] = s
	}
	dataDir := filepath.Join(dir, "data")
	if err := data.WriteBEIR(d, dataDir); err != nil {
		t.Fatal(err)
	}
	toolret := filepath.Join(dir, "toolret")
	if out, err := exec.Command("go", "build", "-o", toolret, "github.com/toolret/toolret/cmd/toolret").CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/toolret: %v\n%s", err, out)
	}
	be, ce, qt := filepath.Join(dir, "be"), filepath.Join(dir, "ce"), filepath.Join(dir, "qt")
	for _, args := range [][]string{
		{"biencoder", "-data", dataDir, "-run", be},
		{"crossencoder", "-data", dataDir, "-first-stage", be, "-run", ce},
		{"classifier", "-kind", "querytype", "-data", dataDir, "-first-stage", be, "-run", qt},
	} {
		start := time.Now()
		if out, err := exec.Command(toolret, append(append([]string{"train"}, args...), "-quiet")...).CombinedOutput(); err != nil {
			t.Fatalf("train %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("train %s in %v", args[0], time.Since(start).Round(time.Millisecond))
	}
	t.Logf("tiny dataset: %d tools, %d training and %d test queries", len(d.Tools), len(d.Splits["train"].Queries), len(d.Splits["test"].Queries))
	kv := map[string]string{"data": dataDir, "method": "rerank", "first-stage": be, "reranker": ce, "classifier": qt, "cutoffs": "1,3,5"}
	got := runJSON(t, kv)
	if _, ok := got["ndcg@5"]; !ok {
		t.Fatalf("eval -method rerank: no ndcg@5 in %v", got)
	}
	// The default pipeline's dev ndcg@5 against the retriever's on the same dev split.
	o := parseKV(t, kv)
	tiny, err := data.Load(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	env, err := setupRerank(o, tiny, false)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := env.Prepare(env.Dev)
	if err != nil {
		t.Fatal(err)
	}
	t5, err := tuneOptions(&rerankOptions{gridMetric: "ndcg@5", minT: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, tuned, err := rerank.Tune(context.Background(), env.Pipeline, qs, rerank.Grid{M: [][2]int{{env.Pipeline.Params.MS, env.Pipeline.Params.MU}}, TauS: []float32{env.Pipeline.Params.TauS},
		TauM: []float32{env.Pipeline.Params.TauM}, N: []int{env.Pipeline.Params.N}, W: env.Grid.W}, t5)
	if err != nil {
		t.Fatal(err)
	}
	retr := 0.0
	for _, q := range qs {
		_, n, _ := metrics.Query(q.Coarse, q.Relevant, 5)
		retr += n / float64(len(qs))
	}
	if env.Pipeline.Norm != rerank.NormMinMax || len(env.Grid.W) != 11 || tuned < retr-1e-9 {
		t.Errorf("default pipeline: interpolation %s over %d weights, dev ndcg@5 %.4f, retriever %.4f", env.Pipeline.Norm, len(env.Grid.W), tuned, retr)
	}
	kv["ablations"] = "true"
	o = parseKV(t, kv)
	o.asJSON = true
	var out strings.Builder
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out.String()), &rows); err != nil || len(rows) != len(evaluate.Variants)+1 {
		t.Fatalf("-ablations: %d rows (%v), want %d", len(rows), err, len(evaluate.Variants)+1)
	}
}
