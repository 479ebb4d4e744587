package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	tgraph "github.com/toolret/toolret/graph"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/colt"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/safetensors"
	"github.com/toolret/toolret/train"
)

// coltCmd trains COLT's graph stage on top of a trained bi-encoder run (-retriever), on that
// run's recorded training split, selecting on its recorded dev split.
func coltCmd(args []string) error {
	fs := flag.NewFlagSet("colt", flag.ContinueOnError)
	cli.Data(fs)
	retriever := cli.Retriever(fs)
	runDir := cli.Run(fs, "run directory (default runs/colt-<time>)")
	resume := cli.Resume(fs)
	def := colt.Default()
	layers := fs.Int("layers", def.Layers, "LightGCN layers")
	lambda := fs.Float64("lambda", def.Lambda, "weight of the cross-view contrastive losses")
	temp := fs.Float64("temperature", def.Temperature, "temperature of the cross-view contrastive losses")
	listLen := fs.Int("list-len", def.ListLen, "tools per query in the list-wise loss")
	dropout := fs.Float64("edge-dropout", def.EdgeDropout, "edge dropout, re-sampled every epoch, in [0, 1)")
	pairwise := fs.Bool("pairwise", false, "ablation: pairwise (BPR) loss instead of list-wise")
	noContrast := fs.Bool("no-contrast", false, "ablation: no cross-view contrastive loss")
	freezeQ := fs.Bool("freeze-queries", false, "keep query nodes at their stage-1 embeddings (train tools and scenes only)")
	holdOut := fs.Bool("hold-out", false, "remove the batch's queries from the graphs for the step and score them from their stage-1 embeddings, as test queries are")
	inductive := fs.Bool("inductive", def.Inductive, "attach queries outside the graph (dev, test, new) to the training scenes by soft edges, and train the batch held out and attached the same way")
	attachTemp := fs.Float64("attach-temp", def.AttachTemp, "temperature of the soft query-scene edges of -inductive")
	toolW := fs.Float64("tool-layer-weight", def.ToolWeight, "weight of the propagated layers in the tool view (1: reference)")
	sceneW := fs.Float64("scene-layer-weight", def.SceneWeight, "weight of the propagated layers in the scene view (1: reference)")
	views := fs.String("views", def.Views, "both, scene (scene view only) or tool (tool view only)")
	epochs := fs.Int("epochs", 60, "epochs")
	batch := fs.Int("batch", 2048, "queries per batch")
	lr := fs.Float64("lr", 1e-3, "learning rate")
	wd := fs.Float64("weight-decay", 1e-7, "weight decay")
	patience := fs.Int("patience", 10, "early stopping: epochs without dev improvement (0: never)")
	metric := cli.Metric(fs, "ndcg@5")
	seed := fs.Uint64("seed", cli.DefaultSeed, "random seed of the graph stage (negatives, order, edge dropout); the dev split is the -retriever run's")
	be := cli.Backend(fs)
	quiet := cli.Quiet(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if _, err := openRun(fs, runDir, *resume, "colt", "colt", "COLT"); err != nil {
		return err
	}
	if *retriever == "" {
		return fmt.Errorf("colt: -retriever RUN (the stage-1 bi-encoder run) is required")
	}
	if err := cli.First(cli.Positive("batch", *batch), cli.Positive("epochs", *epochs), cli.NonNegative("layers", *layers),
		checkListLen(*listLen), cli.LR(*lr), cli.Positive("temperature", *temp), checkDropout(*dropout),
		cli.Positive("attach-temp", *attachTemp), cli.NonNegative("lambda", *lambda), cli.NonNegative("weight-decay", *wd),
		cli.NonNegative("patience", *patience), cli.NonNegative("tool-layer-weight", *toolW),
		cli.NonNegative("scene-layer-weight", *sceneW), checkViews(*views), cli.CheckMetric(*metric)); err != nil {
		return err
	}
	cfg := colt.Config{Layers: *layers, Lambda: *lambda, Temperature: *temp, ListLen: *listLen, EdgeDropout: *dropout,
		Pairwise: *pairwise, NoContrast: *noContrast, Views: *views, FreezeQueries: *freezeQ, HoldOut: *holdOut,
		Inductive: *inductive, AttachTemp: *attachTemp, ToolWeight: *toolW, SceneWeight: *sceneW}
	if err := cfg.Validate(); err != nil {
		return err
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	bk, err := backend.Open(backend.Name(*be))
	if err != nil {
		return err
	}
	// The graph stage trains on the stage-1 run's training split and selects on its dev split,
	// by the recorded query ids: its dev queries were never stage-1 training queries.
	splitsOf := *retriever
	if *resume {
		splitsOf = *runDir
	}
	trainSplit, dev, meta, err := rundir.Splits(splitsOf, d)
	if err != nil {
		return err
	}
	if !*resume {
		parent, err := rundir.Read(*retriever)
		if err != nil {
			return err
		}
		if parent.Kind != "biencoder" {
			return fmt.Errorf("colt: -retriever %s is a %s run, not a bi-encoder run", *retriever, parent.Kind)
		}
	}
	stage1, err := biencoder.LoadRun(*retriever, bk)
	if err != nil {
		return err
	}
	start := time.Now()
	queries, tools, err := stage1Embeddings(stage1, *retriever, d)
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
	cb, err := json.MarshalIndent(map[string]any{"colt": cfg, "retriever": *retriever}, "", "  ")
	if err != nil {
		return err
	}
	task := &colt.Task{Cfg: cfg, Data: d, Train: trainSplit, Dev: dev, Graphs: graphs, Queries: queries, Dim: dim,
		BatchSize: *batch, Seed: *seed, Backend: bk, Files_: map[string][]byte{"colt.json": cb}}
	if err := task.Prepare(); err != nil {
		return err
	}
	opt := train.DefaultOptimizer()
	opt.LR, opt.WeightDecay, opt.Schedule, opt.ClipNorm, opt.Eps, opt.DecayAll = *lr, *wd, "constant", 0, 1e-8, true
	tc := train.Config{RunDir: *runDir, Seed: *seed, Epochs: *epochs, Metric: *metric, Patience: *patience, KeepLast: 1,
		Optimizer: opt, Fingerprint: d.Fingerprint(), Quiet: *quiet}
	if !*resume {
		// Record the run (its dev split is the stage-1 run's) before training starts.
		if err := rundir.Create(*runDir, &rundir.Meta{Kind: "colt", Dataset: d.Name, Fingerprint: d.Fingerprint(),
			Split: meta.Split, Parent: *retriever, Args: cli.Args(fs)}); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "COLT: %d layers, graphs Q-T %d / Q-S %d / S-T %d edges, %d train queries, %d dev (the dev split of %s) -> %s\n",
		cfg.Layers, graphs.QueryTool.NumEdges(), graphs.QueryScene.NumEdges(), graphs.SceneTool.NumEdges(), len(trainSplit.Judged()), len(dev.Queries), *retriever, *runDir)
	trainStart := time.Now()
	sum, err := train.Run(bk, store, task, tc, *resume)
	if err != nil {
		return err
	}
	perEpoch := time.Since(trainStart).Seconds() / float64(max(sum.Epochs, 1))
	fmt.Fprintf(os.Stderr, "trained %d steps (%d epochs, %.2fs/epoch incl. dev evaluation); best dev %s %.2f at step %d\n",
		sum.Steps, sum.Epochs, perEpoch, *metric, sum.BestMetrics[*metric], sum.BestStep)
	// Test: the best checkpoint's tools, stage-1 queries.
	best, err := rundir.BestCheckpoint(*runDir)
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
	return rundir.WriteJSON(*runDir, "test_metrics.json", out)
}

func checkListLen(n int) error {
	if n < 2 {
		return fmt.Errorf("-list-len %d: must be >= 2 (a positive and a negative)", n)
	}
	return nil
}

func checkDropout(p float64) error {
	if !(p >= 0 && p < 1) {
		return fmt.Errorf("-edge-dropout %v: must be in [0, 1)", p)
	}
	return nil
}

func checkViews(v string) error {
	if v != "both" && v != "scene" && v != "tool" {
		return fmt.Errorf("-views %q: want both, scene or tool", v)
	}
	return nil
}

// embeddingCache is the file in the stage-1 run directory caching its embeddings of d's
// queries and tools (keyed by the run's best checkpoint and the data fingerprint).
func embeddingCache(run string, d *data.Dataset) string {
	best, err := rundir.BestCheckpoint(run)
	if err != nil {
		best = run
	}
	return filepath.Join(run, fmt.Sprintf("embeddings-%s-%.12s.safetensors", filepath.Base(best), d.Fingerprint()))
}

// stage1Embeddings returns the stage-1 query and tool embeddings of every query and tool of d,
// cached in the stage-1 run directory. A cache that cannot be read back (corrupt, truncated,
// other shapes) is reported and recomputed.
func stage1Embeddings(stage1 *biencoder.Embedder, run string, d *data.Dataset) (queries, tools [][]float32, err error) {
	cache := embeddingCache(run, d)
	queries, tools, err = readEmbeddingCache(cache, d)
	if err == nil {
		return queries, tools, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "colt: %v; recomputing the stage-1 embeddings\n", err)
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
	// The cache is an optimisation: failing to write it is reported, not an error.
	if err := safetensors.Write(cache, []safetensors.Tensor{
		{Name: "queries", Shape: []int{len(queries), dim}, Data: flat(queries)},
		{Name: "tools", Shape: []int{len(tools), dim}, Data: flat(tools)}}, map[string]string{"fingerprint": d.Fingerprint()}); err != nil {
		fmt.Fprintf(os.Stderr, "colt: embedding cache not written: %v\n", err)
	}
	return queries, tools, nil
}

// readEmbeddingCache reads a stage-1 embedding cache: [queries, D] and [tools, D] finite
// float32 tables of d. Every error names the file; a missing file is an os.ErrNotExist error.
func readEmbeddingCache(path string, d *data.Dataset) (queries, tools [][]float32, err error) {
	f, err := safetensors.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("embedding cache: %w", err) // names path
	}
	if fp := f.Metadata["fingerprint"]; fp != d.Fingerprint() {
		return nil, nil, fmt.Errorf("embedding cache %s: data fingerprint %q, want %q", path, fp, d.Fingerprint())
	}
	table := func(name string, n int) ([][]float32, error) {
		x, shape, err := f.Float32(name)
		if err != nil {
			return nil, fmt.Errorf("embedding cache: %w", err) // names path
		}
		if len(shape) != 2 || shape[0] != n || shape[1] <= 0 || len(x) != shape[0]*shape[1] {
			return nil, fmt.Errorf("embedding cache %s: %s has shape %v, want [%d, D > 0]", path, name, shape, n)
		}
		for i, v := range x {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("embedding cache %s: %s row %d: non-finite value %v", path, name, i/shape[1], v)
			}
		}
		return rows(x, shape), nil
	}
	if queries, err = table("queries", len(d.Queries)); err != nil {
		return nil, nil, err
	}
	if tools, err = table("tools", len(d.Tools)); err != nil {
		return nil, nil, err
	}
	if len(queries[0]) != len(tools[0]) {
		return nil, nil, fmt.Errorf("embedding cache %s: queries have %d dimensions, tools %d", path, len(queries[0]), len(tools[0]))
	}
	return queries, tools, nil
}

func rows(flat []float32, shape []int) [][]float32 {
	out := make([][]float32, shape[0])
	for i := range out {
		out[i] = flat[i*shape[1] : (i+1)*shape[1]]
	}
	return out
}
