package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	tgraph "github.com/toolret/toolret/graph"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/colt"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/safetensors"
	"github.com/toolret/toolret/train"
)

// coltCmd trains COLT's graph stage on top of a trained bi-encoder run.
func coltCmd(args []string) error {
	fs := flag.NewFlagSet("colt", flag.ContinueOnError)
	dataDir := fs.String("data", "", "dataset directory (default: embedded)")
	initRun := fs.String("init-embeddings", "", "stage-1 bi-encoder run (required)")
	runDir := fs.String("run", "", "run directory (default runs/colt-<time>)")
	resume := fs.Bool("resume", false, "continue -run from its newest checkpoint")
	def := colt.Default()
	layers := fs.Int("layers", def.Layers, "LightGCN layers")
	lambda := fs.Float64("lambda", def.Lambda, "weight of the cross-view contrastive losses")
	tau := fs.Float64("tau", def.Tau, "contrastive temperature")
	listLen := fs.Int("list-len", def.ListLen, "tools per query in the list-wise loss")
	dropout := fs.Float64("edge-dropout", def.EdgeDropout, "edge dropout, re-sampled every epoch")
	pairwise := fs.Bool("pairwise", false, "ablation: pairwise (BPR) loss instead of list-wise")
	noContrast := fs.Bool("no-contrast", false, "ablation: no cross-view contrastive loss")
	freezeQ := fs.Bool("freeze-queries", false, "keep query nodes at their stage-1 embeddings (train tools and scenes only)")
	holdOut := fs.Bool("hold-out", false, "remove the batch's queries from the graphs for the step, so training queries are scored as test queries are")
	inductive := fs.Bool("inductive", def.Inductive, "attach queries outside the graph (dev, test, new) to the training scenes by soft edges, and train the batch held out and attached the same way")
	attachTemp := fs.Float64("attach-temp", def.AttachTemp, "temperature of the soft query-scene edges of -inductive")
	toolW := fs.Float64("tool-layer-weight", def.ToolWeight, "weight of the propagated layers in the tool view (1: reference)")
	sceneW := fs.Float64("scene-layer-weight", def.SceneWeight, "weight of the propagated layers in the scene view (1: reference)")
	views := fs.String("views", "both", "both, scene (scene view only) or tool (tool view only)")
	epochs := fs.Int("epochs", 60, "epochs")
	batch := fs.Int("batch", 2048, "queries per batch")
	lr := fs.Float64("lr", 1e-3, "learning rate")
	wd := fs.Float64("weight-decay", 1e-7, "weight decay")
	patience := fs.Int("patience", 10, "early stopping: epochs without dev improvement")
	metric := fs.String("metric", "ndcg@5", "dev metric for model selection")
	devFrac := fs.Float64("dev", 0.1, "dev fraction carved from training queries (use the stage-1 value)")
	seed := fs.Uint64("seed", 1, "random seed of the graph stage (negatives, order, edge dropout)")
	splitSeed := fs.Int64("split-seed", -1, "seed of the dev split: use the stage-1 run's -seed so dev queries were not stage-1 training queries (default: -seed)")
	be := fs.String("backend", "", "compute backend")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *initRun == "" {
		return fmt.Errorf("colt: -init-embeddings RUN is required")
	}
	d, err := loadData(*dataDir)
	if err != nil {
		return err
	}
	if *runDir == "" {
		*runDir = filepath.Join("runs", "colt-"+time.Now().Format("20060102-150405"))
	}
	bk, err := backend.Open(backend.Name(*be))
	if err != nil {
		return err
	}
	if *splitSeed < 0 {
		*splitSeed = int64(*seed)
	}
	trainSplit, dev, err := d.CarveDev("train", *devFrac, *splitSeed)
	if err != nil {
		return err
	}
	cfg := colt.Config{Layers: *layers, Lambda: *lambda, Tau: *tau, ListLen: *listLen, EdgeDropout: *dropout,
		Pairwise: *pairwise, NoContrast: *noContrast, Views: *views, FreezeQueries: *freezeQ, HoldOut: *holdOut,
		Inductive: *inductive, AttachTemp: *attachTemp, ToolWeight: *toolW, SceneWeight: *sceneW}
	if err := cfg.Validate(); err != nil {
		return err
	}
	stage1, err := biencoder.LoadRun(*initRun, bk)
	if err != nil {
		return err
	}
	start := time.Now()
	queries, tools, err := stage1Embeddings(stage1, *initRun, d)
	if err != nil {
		return err
	}
	colt.NormalizeRows(queries)
	colt.NormalizeRows(tools)
	dim := len(tools[0])
	scenes := make([][]float32, len(d.Scenes))
	for s, members := range d.Scenes {
		scenes[s] = make([]float32, dim)
		for _, t := range members {
			for k := range scenes[s] {
				scenes[s][k] += tools[t][k] / float32(len(members))
			}
		}
	}
	fmt.Fprintf(os.Stderr, "stage-1 embeddings of %d queries, %d tools, %d scenes in %v\n", len(queries), len(tools), len(scenes), time.Since(start).Round(time.Millisecond))
	graphs, err := tgraph.FromSplit(d, trainSplit)
	if err != nil {
		return err
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(*seed))
	if !*resume {
		if err := colt.InitVariables(store, bk, queries, tools, scenes); err != nil {
			return err
		}
	}
	cb, _ := json.MarshalIndent(map[string]any{"colt": cfg, "init_embeddings": *initRun}, "", "  ")
	task := &colt.Task{Cfg: cfg, Data: d, Train: trainSplit, Dev: dev, Graphs: graphs, Queries: queries, Dim: dim,
		BatchSize: *batch, Seed: *seed, Backend: bk, Files_: map[string][]byte{"colt.json": cb}}
	if err := task.Prepare(); err != nil {
		return err
	}
	opt := train.DefaultOptimizer()
	opt.LR, opt.WeightDecay, opt.Schedule, opt.ClipNorm, opt.Eps, opt.DecayAll = *lr, *wd, "constant", 0, 1e-8, true
	tc := train.Config{RunDir: *runDir, Seed: *seed, Epochs: *epochs, Metric: *metric, Patience: *patience, KeepLast: 1,
		Optimizer: opt, Fingerprint: d.Fingerprint(), Quiet: *quiet}
	fmt.Fprintf(os.Stderr, "COLT: %d layers, graphs Q-T %d / Q-S %d / S-T %d edges, %d train queries, %d dev -> %s\n",
		cfg.Layers, graphs.QueryTool.NumEdges(), graphs.QueryScene.NumEdges(), graphs.SceneTool.NumEdges(), len(trainSplit.Judged()), len(dev.Queries), *runDir)
	trainStart := time.Now()
	sum, err := train.Run(bk, store, task, tc, *resume)
	if err != nil {
		return err
	}
	perEpoch := time.Since(trainStart).Seconds() / float64(max(sum.Epochs, 1))
	fmt.Fprintf(os.Stderr, "trained %d steps (%d epochs, %.2fs/epoch incl. dev evaluation); best dev %s %.2f at step %d\n",
		sum.Steps, sum.Epochs, perEpoch, *metric, sum.BestMetrics[*metric], sum.BestStep)
	// Test: the best checkpoint's tools, stage-1 queries.
	best, err := biencoderBest(*runDir)
	if err != nil {
		return err
	}
	c, err := checkpoints.Load(best)
	if err != nil {
		return err
	}
	fresh := model.NewStore()
	if err := c.Restore(fresh, bk); err != nil {
		return err
	}
	scorer, err := task.Scorer(fresh)
	if err != nil {
		return err
	}
	s1, err := stage1.Retriever(d, "text", "")
	if err != nil {
		return err
	}
	out := map[string]any{"seconds_per_epoch": perEpoch}
	for _, m := range []struct {
		name string
		r    retrieve.Ranker
	}{{"stage-1 bi-encoder", s1}, {"+ COLT", &colt.Retriever{Stage1: stage1, Scorer: scorer}}} {
		rep, err := metrics.Run(context.Background(), d, "test", m.r, metrics.DefaultKs)
		if err != nil {
			return err
		}
		rep.Dataset = fmt.Sprintf("%s: %s", d.Name, m.name)
		fmt.Print(rep)
		out[m.name] = rep
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return os.WriteFile(filepath.Join(*runDir, "test_metrics.json"), append(b, '\n'), 0o644)
}

func biencoderBest(run string) (string, error) { return biencoder.BestCheckpoint(run) }

// stage1Embeddings returns the stage-1 query and tool embeddings of every query and tool of d,
// cached in the stage-1 run directory (keyed by its best checkpoint and the data fingerprint).
func stage1Embeddings(stage1 *biencoder.Embedder, run string, d *data.Dataset) (queries, tools [][]float32, err error) {
	best, err := biencoder.BestCheckpoint(run)
	if err != nil {
		best = run
	}
	cache := filepath.Join(run, fmt.Sprintf("embeddings-%s-%.12s.safetensors", filepath.Base(best), d.Fingerprint()))
	if f, err := safetensors.Open(cache); err == nil {
		q, qs, err1 := f.Float32("queries")
		t, ts, err2 := f.Float32("tools")
		if err1 == nil && err2 == nil && qs[0] == len(d.Queries) && ts[0] == len(d.Tools) {
			return rows(q, qs), rows(t, ts), nil
		}
	}
	qt := make([]string, len(d.Queries))
	for i, q := range d.Queries {
		qt[i] = q.Text
	}
	if queries, err = stage1.Embed(biencoder.QueryTower, qt); err != nil {
		return nil, nil, err
	}
	tt := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		tt[i] = t.Text
	}
	if tools, err = stage1.Embed(biencoder.ToolTower, tt); err != nil {
		return nil, nil, err
	}
	flat := func(r [][]float32) []float32 {
		var out []float32
		for _, x := range r {
			out = append(out, x...)
		}
		return out
	}
	dim := len(tools[0])
	// The cache is an optimisation: failing to write it is not an error.
	_ = safetensors.Write(cache, []safetensors.Tensor{
		{Name: "queries", Shape: []int{len(queries), dim}, Data: flat(queries)},
		{Name: "tools", Shape: []int{len(tools), dim}, Data: flat(tools)}}, map[string]string{"fingerprint": d.Fingerprint()})
	return queries, tools, nil
}

func rows(flat []float32, shape []int) [][]float32 {
	out := make([][]float32, shape[0])
	for i := range out {
		out[i] = flat[i*shape[1] : (i+1)*shape[1]]
	}
	return out
}
