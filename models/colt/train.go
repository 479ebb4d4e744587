package colt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	tgraph "github.com/toolret/toolret/graph"
	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/runs"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/safetensors"
	"github.com/toolret/toolret/train"
)

// TrainConfig is the recipe of `train colt`: COLT's graph stage on top of a trained
// bi-encoder run (Retriever), on that run's recorded training split, selecting on its
// recorded dev split. Every flag of the command is a field, the model's in Model (colt.Config):
// its help tag is the flag's help and its json tag the flag's name (a flag tag names it
// where Config's json name, that of the model's colt.json, differs); the command declares its
// flags from the fields (package internal/flagcfg). The fields tagged json:"-" are
// operational. DefaultTrainConfig holds the defaults.
type TrainConfig struct {
	Model       Config  `json:"model"`
	RunDir      string  `json:"-"`                                                                                                                    // -run: the run directory (required)
	Resume      bool    `json:"-"`                                                                                                                    // -resume: continue RunDir from its newest checkpoint (the configuration must be the run's: Train names every field that differs)
	Retriever   string  `json:"first-stage" help:"stage-1 bi-encoder run (train biencoder); its recorded dev split is used"`                          // -first-stage: the stage-1 bi-encoder run (required)
	Epochs      int     `json:"epochs" help:"epochs"`                                                                                                 // -epochs (default 60)
	Batch       int     `json:"batch" help:"queries per batch"`                                                                                       // -batch: queries per batch (default 2048)
	LR          float64 `json:"lr" help:"learning rate"`                                                                                              // -lr (default 1e-3)
	WeightDecay float64 `json:"weight-decay" help:"weight decay"`                                                                                     // -weight-decay (default 1e-7)
	Patience    int     `json:"patience" help:"early stopping: epochs without dev improvement (0: never)"`                                            // -patience: epochs without dev improvement before stopping (default 10; 0: never)
	Metric      string  `json:"metric" help:"dev metric selecting the best checkpoint: recall@K, ndcg@K or comp@K with K in 1,3,5,10"`                // -metric: the dev metric selecting the best checkpoint (default ndcg@5)
	Seed        uint64  `json:"seed" help:"random seed of the graph stage (negatives, order, edge dropout); the dev split is the -first-stage run's"` // -seed: of the graph stage (negatives, order, edge dropout; default 1)
	Backend     string  `json:"-"`                                                                                                                    // -backend ("": the default)
	Devices     int     `json:"-"`                                                                                                                    // -devices: split each batch over this many devices of Backend (0 or 1: one; train.Config.Devices)
	Quiet       bool    `json:"-"`                                                                                                                    // -quiet: no progress bar
	// Data is the dataset (nil: the embedded default dataset).
	Data *data.Dataset `json:"-"`
	// Args is provenance only: the command's flags as recorded in a new run's run.json.
	Args map[string]string `json:"-"`
	// Stdout and Stderr receive the reports and the messages (nil: os.Stdout, os.Stderr); the
	// trainer's progress goes to os.Stderr.
	Stdout, Stderr io.Writer `json:"-"`
}

// DefaultTrainConfig returns the command's defaults (the model's: Default).
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{Model: Default(), Epochs: 60, Batch: 2048, LR: 1e-3, WeightDecay: 1e-7, Patience: 10, Metric: "ndcg@5",
		Seed: rundir.DefaultSeed}
}

// Result is what Train did: the run directory, the trainer's summary, the seconds per epoch
// (dev evaluation included) and the test reports of the stage-1 bi-encoder and of COLT, by
// row name ("stage-1 bi-encoder", "+ COLT").
type Result struct {
	RunDir          string
	Summary         *train.Summary
	SecondsPerEpoch float64
	Test            map[string]metrics.Report
}

// Validate checks c.
func (c *TrainConfig) Validate() error {
	if c.Retriever == "" {
		return fmt.Errorf("colt: -first-stage RUN (the stage-1 bi-encoder run) is required")
	}
	m := c.Model
	if err := check.First(check.Positive("batch", c.Batch), check.Positive("epochs", c.Epochs), check.NonNegative("layers", m.Layers),
		checkListLen(m.ListLen), check.Positive("lr", c.LR), check.Positive("temperature", m.Temperature), checkDropout(m.EdgeDropout),
		check.Positive("attach-temp", m.AttachTemp), check.NonNegative("lambda", m.Lambda), check.NonNegative("weight-decay", c.WeightDecay),
		check.NonNegative("patience", c.Patience), check.NonNegative("tool-layer-weight", m.ToolWeight),
		check.NonNegative("scene-layer-weight", m.SceneWeight), checkViews(m.Views), metrics.CheckDevMetric(c.Metric)); err != nil {
		return err
	}
	return m.Validate()
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

// Train trains COLT's graph stage into cfg.RunDir (or resumes it) over the stage-1 embeddings
// of the Retriever run (cached there, EmbeddingCache), then evaluates the stage-1 bi-encoder
// and COLT on the test split, prints both and writes test_metrics.json.
func Train(ctx context.Context, cfg TrainConfig) (*Result, error) {
	if cfg.Resume {
		if err := runs.Resume(cfg.RunDir, Kind, "COLT", &cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	out, log := runs.Writers(cfg.Stdout, cfg.Stderr)
	d, bk, err := runs.Start(cfg.RunDir, cfg.Resume, Kind, "COLT", cfg.Data, cfg.Backend, cfg.Devices)
	if err != nil {
		return nil, err
	}
	// The graph stage trains on the stage-1 run's training split and selects on its dev split,
	// by the recorded query ids: its dev queries were never stage-1 training queries.
	splitsOf := cfg.Retriever
	if cfg.Resume {
		splitsOf = cfg.RunDir
	}
	trainSplit, dev, meta, err := rundir.Splits(splitsOf, d)
	if err != nil {
		return nil, err
	}
	if !cfg.Resume {
		parent, err := rundir.Read(cfg.Retriever)
		if err != nil {
			return nil, err
		}
		if parent.Kind != "biencoder" {
			return nil, fmt.Errorf("colt: -first-stage %s is a %s run, not a bi-encoder run", cfg.Retriever, parent.Kind)
		}
	}
	stage1, err := biencoder.LoadRun(cfg.Retriever, bk)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	queries, tools, err := Stage1Embeddings(stage1, cfg.Retriever, d, log)
	if err != nil {
		return nil, err
	}
	NormalizeRows(queries)
	NormalizeRows(tools)
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
	fmt.Fprintf(log, "stage-1 embeddings of %d queries, %d tools, %d scenes in %v\n", len(queries), len(tools), len(scenes), time.Since(start).Round(time.Millisecond))
	graphs, err := tgraph.FromSplit(d, trainSplit)
	if err != nil {
		return nil, err
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(cfg.Seed))
	if !cfg.Resume {
		if err := InitVariables(store, bk, queries, tools, scenes); err != nil {
			return nil, err
		}
	}
	mc := cfg.Model
	cb, err := json.MarshalIndent(map[string]any{"colt": mc, "retriever": cfg.Retriever}, "", "  ")
	if err != nil {
		return nil, err
	}
	task := &Task{Cfg: mc, Data: d, Train: trainSplit, Dev: dev, Graphs: graphs, Queries: queries, Dim: dim,
		BatchSize: cfg.Batch, Seed: cfg.Seed, Backend: bk, ExtraFiles: map[string][]byte{"colt.json": cb}}
	if err := task.Prepare(); err != nil {
		return nil, err
	}
	// COLT's optimizer: a constant rate, no clipping, no warm-up, Adam's eps, decay on all.
	tc, _ := train.RunSettings{RunDir: cfg.RunDir, Seed: cfg.Seed, Epochs: cfg.Epochs, Metric: cfg.Metric, Patience: cfg.Patience, KeepLast: 1,
		LR: cfg.LR, WeightDecay: cfg.WeightDecay, Schedule: "constant", Fingerprint: d.Fingerprint(), Devices: cfg.Devices, Quiet: cfg.Quiet}.Config(task)
	tc.Optimizer.Eps, tc.Optimizer.DecayAll = 1e-8, true
	if !cfg.Resume {
		// Record the run (its dev split is the stage-1 run's) before training starts.
		m := &rundir.Meta{Kind: Kind, Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: meta.Split, Parent: cfg.Retriever}
		if err := m.Record(&cfg, cfg.Args); err != nil {
			return nil, err
		}
		if err := rundir.Create(cfg.RunDir, m); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(log, "COLT: %d layers, graphs Q-T %d / Q-S %d / S-T %d edges, %d train queries, %d dev (the dev split of %s) -> %s\n",
		mc.Layers, graphs.QueryTool.NumEdges(), graphs.QueryScene.NumEdges(), graphs.SceneTool.NumEdges(), len(trainSplit.Judged()), len(dev.Queries), cfg.Retriever, cfg.RunDir)
	trainStart := time.Now()
	sum, err := train.Run(bk, store, task, tc, cfg.Resume)
	if err != nil {
		return nil, err
	}
	perEpoch := time.Since(trainStart).Seconds() / float64(max(sum.Epochs, 1))
	fmt.Fprintf(log, "trained %d steps (%d epochs, %.2fs/epoch incl. dev evaluation); best dev %s %.2f at step %d\n",
		sum.Steps, sum.Epochs, perEpoch, cfg.Metric, sum.BestMetrics[cfg.Metric], sum.BestStep)
	// Test: the best checkpoint's tools, stage-1 queries.
	best, err := rundir.BestCheckpoint(cfg.RunDir)
	if err != nil {
		return nil, err
	}
	c, err := checkpoints.Load(best)
	if err != nil {
		return nil, err
	}
	fresh := model.NewStore()
	if err := c.Restore(fresh, bk); err != nil {
		return nil, err
	}
	scorer, err := task.Scorer(fresh)
	if err != nil {
		return nil, err
	}
	s1, err := stage1.Ranker(d, "text", "")
	if err != nil {
		return nil, err
	}
	res := &Result{RunDir: cfg.RunDir, Summary: sum, SecondsPerEpoch: perEpoch, Test: map[string]metrics.Report{}}
	rec := map[string]any{"seconds_per_epoch": perEpoch}
	for _, m := range []struct {
		name string
		r    rank.Ranker
	}{{"stage-1 bi-encoder", s1}, {"+ COLT", &Ranker{Stage1: stage1, Scorer: scorer}}} {
		rep, err := metrics.Run(ctx, d, "test", m.r, metrics.DefaultKs)
		if err != nil {
			return nil, err
		}
		rep.Dataset = fmt.Sprintf("%s: %s", d.Name, m.name)
		fmt.Fprint(out, rep)
		rec[m.name], res.Test[m.name] = rep, rep
	}
	return res, rundir.WriteJSON(cfg.RunDir, "test_metrics.json", rec)
}

// EmbeddingCache is the file in the stage-1 run directory run caching its embeddings of d's
// queries and tools (keyed by the run's best checkpoint and the data fingerprint).
func EmbeddingCache(run string, d *data.Dataset) string {
	best, err := rundir.BestCheckpoint(run)
	if err != nil {
		best = run
	}
	return filepath.Join(run, fmt.Sprintf("embeddings-%s-%.12s.safetensors", filepath.Base(best), d.Fingerprint()))
}

// Stage1Embeddings returns the stage-1 query and tool embeddings of every query and tool of
// d, cached in the stage-1 run directory run (EmbeddingCache). A cache that cannot be read
// back (corrupt, truncated, other shapes) is reported on log and recomputed.
func Stage1Embeddings(stage1 *biencoder.Embedder, run string, d *data.Dataset, log io.Writer) (queries, tools [][]float32, err error) {
	cache := EmbeddingCache(run, d)
	queries, tools, err = ReadEmbeddingCache(cache, d)
	if err == nil {
		return queries, tools, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(log, "colt: %v; recomputing the stage-1 embeddings\n", err)
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
		fmt.Fprintf(log, "colt: embedding cache not written: %v\n", err)
	}
	return queries, tools, nil
}

// ReadEmbeddingCache reads a stage-1 embedding cache: [queries, D] and [tools, D] finite
// float32 tables of d. Every error names the file; a missing file is an os.ErrNotExist error.
func ReadEmbeddingCache(path string, d *data.Dataset) (queries, tools [][]float32, err error) {
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
		return rowsOf(x, shape), nil
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

func rowsOf(flat []float32, shape []int) [][]float32 {
	out := make([][]float32, shape[0])
	for i := range out {
		out[i] = flat[i*shape[1] : (i+1)*shape[1]]
	}
	return out
}
