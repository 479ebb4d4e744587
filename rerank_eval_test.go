package toolret_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/rundir"
)

// writeCrossEncoderRun writes an untrained cross-encoder run (smallRun) over the embedded
// dataset's tools, as train crossencoder -first-stage FIRST leaves one: its run.json records
// FIRST's split.
func writeCrossEncoderRun(t *testing.T, dir, first string) {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := exporttest.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	bc, err := exporttest.Config(smallRun, tok.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	cfg := &crossencoder.Config{Encoder: bc.Encoder, MaxLen: 64, LossKind: crossencoder.LossBCE}
	files, err := rundir.WriteModelFiles(dir, crossencoder.ConfigFile, cfg.Marshal(), tok)
	if err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(3))
	if err := bc.Encoder.Init(store.RootScope(), 3); err != nil {
		t.Fatal(err)
	}
	tools := make([]string, len(d.Tools))
	for i, tl := range d.Tools {
		tools[i] = tl.Text
	}
	// Scoring once creates the head's variables.
	if _, err := crossencoder.NewModel(cfg, tok, be, store, tools).Score(context.Background(), "q", []int{0}); err != nil {
		t.Fatal(err)
	}
	meta, err := rundir.Read(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := rundir.Create(dir, &rundir.Meta{Kind: "crossencoder", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: meta.Split, Parent: first}); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoints.Save(dir, store, checkpoints.Manifest{Step: 1, Seed: 1, Fingerprint: d.Fingerprint()}, files); err != nil {
		t.Fatal(err)
	}
}

// TestEvaluateRerank: a Rerank-m evaluation through EvalConfig.Rerank gives the metrics eval
// -method rerank-m prints for the same runs and flags (its -json, byte for byte), with a fixed
// and a dev-tuned weight; the reranking changes the first stage's figures; and a Rerank with
// another method, or without its runs, is refused.
func TestEvaluateRerank(t *testing.T) {
	if testing.Short() {
		t.Skip("runs models")
	}
	_, first, ce := rerankRuns(t)
	ctx := context.Background()
	half := 0.5
	for _, c := range []struct {
		name    string
		args    []string
		rr      evaluate.RerankConfig
		cutoffs []int
	}{
		{"zscore w=0.5", []string{"-weight", "0.5", "-interpolate", "zscore"},
			evaluate.RerankConfig{Weight: &half, Interpolate: "zscore"}, nil},
		{"minmax w on dev", []string{"-depth", "8", "-cutoffs", "1,5"},
			evaluate.RerankConfig{Depth: 8}, []int{1, 5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := c.rr
			rc.FirstStage, rc.Reranker = first, ce
			if rc.Depth == 0 {
				rc.Depth = 30
			}
			cfg := toolret.EvalConfig{Backend: "go", Rerank: &rc, Cutoffs: c.cutoffs}
			sameAsCommand(t, cfg, append([]string{"-method", "rerank-m", "-first-stage", first, "-reranker", ce, "-backend", "go"}, c.args...)...)
		})
	}
	// Weight 1 ranks the top 30 by the cross-encoder alone: not the first stage's ranking.
	one := 1.0
	alone, err := toolret.Evaluate(ctx, toolret.EvalConfig{Backend: "go", Run: first})
	if err != nil {
		t.Fatal(err)
	}
	rr, err := toolret.Evaluate(ctx, toolret.EvalConfig{Backend: "go", Rerank: &evaluate.RerankConfig{FirstStage: first, Reranker: ce, Depth: 30, Weight: &one}})
	if err != nil {
		t.Fatal(err)
	}
	if alone.Overall.NDCG[10] == rr.Overall.NDCG[10] && alone.Overall.Recall[1] == rr.Overall.Recall[1] {
		t.Errorf("Rerank-30 by the cross-encoder alone has the first stage's figures (NDCG@10 %.4f): nothing reranked", rr.Overall.NDCG[10])
	}
	prompt := "query: "
	for _, e := range []struct {
		cfg  toolret.EvalConfig
		want string
	}{
		{toolret.EvalConfig{Run: first, Rerank: &evaluate.RerankConfig{FirstStage: first, Reranker: ce}}, "one of Run, Model, Index and Fuse, or Rerank"},
		{toolret.EvalConfig{Rerank: &evaluate.RerankConfig{FirstStage: first, Depth: 10}}, "-reranker"},
		{toolret.EvalConfig{Rerank: &evaluate.RerankConfig{FirstStage: first, Reranker: ce}}, "-classifier"},
		{toolret.EvalConfig{Rerank: &evaluate.RerankConfig{FirstStage: first, Reranker: ce, Depth: 10, Interpolate: "sigmoid"}}, "-interpolate"},
		{toolret.EvalConfig{Prompts: export.Prompts{Query: &prompt}, Run: first}, "Prompts apply to a Model"},
	} {
		if _, err := toolret.Evaluate(ctx, e.cfg); err == nil || !strings.Contains(err.Error(), e.want) {
			t.Errorf("%+v: error %v, want %q", e.cfg, err, e.want)
		}
	}
}

// sameAsCommand checks that Evaluate of cfg reports, as JSON, what eval args... -json prints.
func sameAsCommand(t *testing.T, cfg toolret.EvalConfig, args ...string) {
	t.Helper()
	rep, err := toolret.Evaluate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Overall.N == 0 {
		t.Fatalf("no query evaluated")
	}
	rep.Subsets, rep.ToolRecall = nil, nil // eval prints them with -subsets
	sameJSON(t, "toolret.Evaluate", rep, nil, args...)
}

// TestEvaluatePrompts: Prompts reach a Model as eval -query-prompt and -tool-prompt give
// them (the same figures), and change its figures.
func TestEvaluatePrompts(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "model")
	if err := exporttest.WriteHF(dir, exporttest.Options{}, be, 1); err != nil {
		t.Fatal(err)
	}
	q, tool := "search query: ", "tool: "
	cfg := toolret.EvalConfig{Backend: "go", Model: dir, Prompts: export.Prompts{Query: &q, Tool: &tool}}
	sameAsCommand(t, cfg, "-model", dir, "-query-prompt", q, "-tool-prompt", tool, "-backend", "go")
	with, err := toolret.Evaluate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	without, err := toolret.Evaluate(context.Background(), toolret.EvalConfig{Backend: "go", Model: dir})
	if err != nil {
		t.Fatal(err)
	}
	if with.Overall.NDCG[10] == without.Overall.NDCG[10] {
		t.Errorf("NDCG@10 %.4f with the prompts and without: they did not reach the model", with.Overall.NDCG[10])
	}
}

// TestEvaluateFuseDev: a fusion whose zscore weights are picked on the run's recorded dev
// split (FusionDev) reports what eval -method fusion -weight dev prints, and those weights
// are not a fixed pair's.
func TestEvaluateFuseDev(t *testing.T) {
	if testing.Short() {
		t.Skip("runs models")
	}
	_, run := recordedRun(t)
	fuse := []string{"bm25", "run:" + run}
	cfg := toolret.EvalConfig{Backend: "go", Fuse: fuse, Fusion: "zscore", FusionDev: true, FusionSteps: 4, Cutoffs: []int{1, 5}}
	sameAsCommand(t, cfg, "-method", "fusion", "-runs", strings.Join(fuse, ","), "-fusion", "zscore", "-weight", "dev", "-fusion-steps", "4", "-cutoffs", "1,5", "-backend", "go")
	e, err := toolret.NewEvaluation(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if !strings.HasPrefix(e.Method, "fusion zscore of bm25, run:") || !strings.HasSuffix(e.Method, " on dev") {
		t.Errorf("method %q: want the zscore fusion with weights on dev", e.Method)
	}
	for _, c := range []struct {
		cfg  toolret.EvalConfig
		want string
	}{
		{toolret.EvalConfig{Fuse: []string{"bm25", "bm25"}, Fusion: "zscore", FusionDev: true}, "the dev split is the one a trained run recorded"},
		{toolret.EvalConfig{Fuse: []string{"bm25", "bm25"}, Fusion: "rrf", FusionDev: true}, "not rrf"},
		{toolret.EvalConfig{Fuse: []string{"bm25", "bm25"}, Fusion: "zscore", FusionSteps: 5}, "apply to FusionDev"},
		{toolret.EvalConfig{Fuse: []string{"bm25", "rerank"}}, "fuse its saved rankings"},
	} {
		if _, err := toolret.Evaluate(context.Background(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
}
