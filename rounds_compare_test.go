package toolret_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/candidates"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/rundir"
)

// untimed decodes eval -feedback's or -rewriter's -json output (or the library's report
// encoded alike) and encodes it again without the per-query times of its rounds
// (wall-clock, different in every run).
func untimed(t *testing.T, b []byte) []byte {
	t.Helper()
	var v struct {
		Method    string           `json:"method"`
		Iterative string           `json:"iterative"`
		Dataset   string           `json:"dataset"`
		Split     string           `json:"split"`
		Rounds    []map[string]any `json:"rounds"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	for _, r := range v.Rounds {
		delete(r, "retrieve_ms_per_query")
		delete(r, "refine_ms_per_query")
	}
	return encodeJSON(t, v)
}

// TestEvaluateRounds: the iterative retrieval through EvalConfig.Feedback (a prf collection
// replayed) and EvalConfig.Rewriter (the prf loop live) reports the rounds eval -feedback and
// eval -rewriter prf print for the same runs and flags (their -json, the times aside); round
// 0 is Evaluate's figures for Run; Rankings hold one ranking per judged query and round; and
// configurations that do not go together are refused.
func TestEvaluateRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs models")
	}
	dir := t.TempDir()
	dataDir, beRun, mlc, fb := filepath.Join(dir, "data"), filepath.Join(dir, "be"), filepath.Join(dir, "mlc"), filepath.Join(dir, "fb.jsonl")
	d, err := exporttest.SmallData(dataDir, 20, 30)
	if err != nil {
		t.Fatal(err)
	}
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteRun(beRun, smallRun, bk, 3); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteClassifierRun(mlc, exporttest.ClassifierOptions{}, bk, 1); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(mlc, rundir.MetaFile)) // it names the whole embedded dataset
	rk, _, err := candidates.Open(candidates.Source{Kind: "bi-encoder", Run: beRun}, d, nil, bk)
	if err != nil {
		t.Fatal(err)
	}
	j, _, err := feedback.LoadJudge(mlc, d, bk)
	if err != nil {
		t.Fatal(err)
	}
	prf, err := feedback.NewPRF(j, feedback.PRFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := feedback.Run(context.Background(), feedback.Config{Data: d, Ranker: rk, Rewriter: prf, Splits: []string{"test"}, K: 5, Iterations: 3,
		Out: fb, Settings: map[string]string{"refiner": "prf"}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plain, err := toolret.Evaluate(ctx, toolret.EvalConfig{Data: dataDir, Run: beRun, Backend: "go", Cutoffs: []int{1, 5}})
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"-data", dataDir, "-run", beRun, "-backend", "go", "-cutoffs", "1,5"}
	for _, c := range []struct {
		name   string
		cfg    toolret.EvalConfig
		args   []string
		rounds int
	}{
		{"replay", toolret.EvalConfig{Feedback: fb}, []string{"-feedback", fb}, 4},
		{"replay 2 rounds", toolret.EvalConfig{Feedback: fb, Iterations: 2}, []string{"-feedback", fb, "-iterations", "2"}, 3},
		{"live", toolret.EvalConfig{Rewriter: &toolret.Rewriter{Judge: mlc, K: 5}, Iterations: 3},
			[]string{"-rewriter", "prf", "-prf-model", mlc, "-iterations", "3", "-rewriter-k", "5"}, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Data, cfg.Run, cfg.Backend, cfg.Cutoffs = dataDir, beRun, "go", []int{1, 5}
			r, err := toolret.EvaluateRounds(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, "toolret.EvaluateRounds", map[string]any{"method": r.Method, "iterative": r.Head, "dataset": r.Data.Name, "split": r.Split.Name, "rounds": r.Rounds},
				untimed, append(base, c.args...)...)
			if len(r.Rounds) != c.rounds || len(r.Rankings) != c.rounds {
				t.Fatalf("%d rounds, %d rankings: want %d", len(r.Rounds), len(r.Rankings), c.rounds)
			}
			for i, rk := range r.Rankings {
				if len(rk) != len(r.Split.Judged()) {
					t.Errorf("round %d: %d rankings for %d judged queries", i, len(rk), len(r.Split.Judged()))
				}
			}
			if got, want := r.Rounds[0].Metrics, plain.Overall; got.Recall[5] != want.Recall[5] || got.NDCG[5] != want.NDCG[5] {
				t.Errorf("round 0: R@5 %.4f NDCG@5 %.4f; Evaluate of the run: %.4f %.4f", got.Recall[5], got.NDCG[5], want.Recall[5], want.NDCG[5])
			}
		})
	}
	for _, c := range []struct {
		cfg  toolret.EvalConfig
		want string
	}{
		{toolret.EvalConfig{Run: beRun, Feedback: fb, Rewriter: &toolret.Rewriter{Judge: mlc}}, "give one"},
		{toolret.EvalConfig{Run: beRun}, "give Feedback"},
		{toolret.EvalConfig{Feedback: fb}, "give Run"},
		{toolret.EvalConfig{Run: beRun, Feedback: fb, Iterations: -1}, "Iterations -1"},
		{toolret.EvalConfig{Run: beRun, Rewriter: &toolret.Rewriter{}}, "Judge"},
		{toolret.EvalConfig{Run: beRun, Feedback: fb, Fuse: []string{"bm25"}}, "Run alone"},
	} {
		c.cfg.Data = dataDir
		if _, err := toolret.EvaluateRounds(ctx, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("EvaluateRounds %+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
	if _, err := toolret.Evaluate(ctx, toolret.EvalConfig{Data: dataDir, Run: beRun, Feedback: fb}); err == nil || !strings.Contains(err.Error(), "EvaluateRounds") {
		t.Errorf("Evaluate with Feedback: error %v, want one pointing to EvaluateRounds", err)
	}
}

// TestCompare: Compare of two rankings reports what eval -compare A,B prints for the same
// entries and flags (its -json, byte for byte), on a split of the dataset and on the run's
// recorded dev split; a ranking compared with itself differs by nothing; and configurations
// that do not go together are refused.
func TestCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("runs models")
	}
	_, run := recordedRun(t)
	ctx := context.Background()
	for _, split := range []string{"test", "dev"} {
		t.Run(split, func(t *testing.T) {
			cfg := toolret.CompareConfig{A: "bm25", B: "run:" + run, Samples: 500, Seed: 3,
				Eval: toolret.EvalConfig{Backend: "go", Split: split, Cutoffs: []int{1, 5}}}
			rep, err := toolret.Compare(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, "toolret.Compare", map[string]any{"dataset": rep.Dataset, "split": rep.Split, "queries": rep.Queries,
				"a": cfg.A, "b": cfg.B, "samples": cfg.Samples, "seed": cfg.Seed, "metrics": rep.Metrics},
				nil, "-compare", cfg.A+","+cfg.B, "-compare-samples", "500", "-seed", "3", "-cutoffs", "1,5", "-split", split, "-backend", "go")
			if len(rep.Metrics) != 6 || rep.Queries == 0 {
				t.Errorf("%d metrics over %d queries: want 6 over the split's judged queries", len(rep.Metrics), rep.Queries)
			}
		})
	}
	same, err := toolret.Compare(ctx, toolret.CompareConfig{A: "bm25", B: "bm25", Samples: 200})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range same.Metrics {
		if r.Diff != 0 || r.P != 1 {
			t.Errorf("bm25 against itself: %+v, want no difference, p 1", r)
		}
	}
	for _, c := range []struct {
		cfg  toolret.CompareConfig
		want string
	}{
		{toolret.CompareConfig{A: "bm25"}, "want two rankings"},
		{toolret.CompareConfig{A: "bm25", B: "bm25", Eval: toolret.EvalConfig{Run: run}}, "its own A and B"},
		{toolret.CompareConfig{A: "bm25", B: "bm25", Eval: toolret.EvalConfig{Fusion: "zscore"}}, "do not apply"},
		{toolret.CompareConfig{A: "bm25", B: "rerank"}, "fuse its saved rankings"},
		{toolret.CompareConfig{A: "bm25", B: "bm25", Samples: -1}, "Samples -1"},
		{toolret.CompareConfig{A: "bm25", B: "bm25", Eval: toolret.EvalConfig{Split: "dev"}}, "trained run recorded"},
	} {
		if _, err := toolret.Compare(ctx, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Compare %+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestEvaluateAblations: EvaluateAblations reports the table eval -method rerank -ablations
// prints for the same runs and flags (its -json, byte for byte): the first stage alone and
// one row per variant; and a Rerank that fixes what the ablations vary is refused.
func TestEvaluateAblations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs models")
	}
	bk, first, ce := rerankRuns(t)
	qt := filepath.Join(t.TempDir(), "qt")
	if err := exporttest.WriteClassifierRun(qt, exporttest.ClassifierOptions{Kind: classifier.KindQueryType}, bk, 2); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rc := evaluate.RerankConfig{FirstStage: first, Reranker: ce, Classifier: qt, GridM: [][2]int{{2, 4}, {3, 8}}}
	rep, err := toolret.EvaluateAblations(ctx, toolret.EvalConfig{Backend: "go", Rerank: &rc, Cutoffs: []int{1, 5}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != len(evaluate.Variants)+1 || rep.DevQueries == 0 || rep.Metric != evaluate.DefaultRerankMetric {
		t.Fatalf("%d rows, %d dev queries, metric %q: want %d rows tuned on dev with %s", len(rep.Rows), rep.DevQueries, rep.Metric, len(evaluate.Variants)+1, evaluate.DefaultRerankMetric)
	}
	rows := make([]map[string]any, len(rep.Rows))
	for i, r := range rep.Rows {
		rows[i] = map[string]any{"name": r.Name, "params": r.Params, "metrics": r.Metrics}
	}
	sameJSON(t, "toolret.EvaluateAblations", rows, nil, "-method", "rerank", "-ablations", "-first-stage", first, "-reranker", ce, "-classifier", qt, "-grid-m", "2:4,3:8", "-cutoffs", "1,5", "-backend", "go")
	for _, c := range []struct {
		cfg  toolret.EvalConfig
		want string
	}{
		{toolret.EvalConfig{}, "give Rerank"},
		{toolret.EvalConfig{Rerank: &evaluate.RerankConfig{FirstStage: first, Reranker: ce, Depth: 10}}, "runs every variant"},
		{toolret.EvalConfig{Rerank: &evaluate.RerankConfig{FirstStage: first, Reranker: ce, OracleType: true}}, "runs every variant"},
	} {
		if _, err := toolret.EvaluateAblations(ctx, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("EvaluateAblations %+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
}
