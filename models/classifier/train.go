package classifier

import (
	"context"
	"fmt"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/runs"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/train"
)

// TrainConfig is the recipe of `train classifier`: a query-type classifier (single- vs
// multi-tool query) or a multi-label classifier over all tools (a retriever), an encoder with
// a head. Every flag of the command is a field (the shared ones in runs.Head);
// DefaultTrainConfig holds the defaults.
type TrainConfig struct {
	runs.Head
	// Kind is -kind: KindQueryType (default) or KindMLC.
	Kind string `json:"kind" help:"querytype (single- vs multi-tool query) or mlc (multi-label over all tools: a retriever)"`
	// Loss is -loss: querytype ce (2-way softmax) or bce (one logit); mlc bce (per-tool
	// sigmoid) or softmax (multi-positive softmax over all tools). "": DefaultLoss(Kind).
	Loss string `json:"loss" help:"querytype: ce (2-way softmax, default) or bce (one logit); mlc: bce (per-tool sigmoid, default) or softmax (multi-positive softmax over all tools, the Tool2Vec paper's code)"`
	// HeadInit is -head-init: HeadInitRandom (default; "" means it) or, for mlc, HeadInitTools
	// (Imprint).
	HeadInit string `json:"head-init" help:"mlc: the head's initial weights: random (N(0, initializer_range), as HF initialises a new head) or tools (imprinted: each tool's row its text's pooled embedding by the encoder, scaled so logits start at 20 x cosine; pairs with -pooling mean over a sentence encoder)"`
	// FreezeUntrained is -freeze-untrained (mlc): Task.FreezeUntrained.
	FreezeUntrained bool `json:"freeze-untrained" help:"mlc: the outputs of tools no training query has get no gradient: their rows stay as initialised (with -head-init tools, their texts' embeddings) and the encoder is not trained away from them"`
	// Data is the dataset (nil: the embedded default dataset).
	Data *data.Dataset `json:"-"`
	// Args is provenance only: the command's flags as recorded in a new run's run.json.
	Args map[string]string `json:"-"`
}

// DefaultTrainConfig returns the command's defaults: a query-type classifier, max length 32,
// batch 32, 4 epochs, the kind's loss and metric (Loss and Metric empty).
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{Head: runs.DefaultHead(32, 32, 4, ""), Kind: KindQueryType, HeadInit: HeadInitRandom}
}

// DefaultLoss returns the loss of a classifier of kind when none is given.
func DefaultLoss(kind string) string {
	if kind == KindMLC {
		return "bce"
	}
	return "ce"
}

// DefaultMetric returns the dev metric of a classifier of kind when none is given.
func DefaultMetric(kind string) string {
	if kind == KindMLC {
		return "ndcg@5"
	}
	return "accuracy"
}

// Result is what Train did: the run directory, the trainer's summary and, with a test
// split, its report: Test for an mlc classifier (a retriever), Types for a query-type one.
type Result struct {
	RunDir  string
	Summary *train.Summary
	Test    *metrics.Report
	Types   map[string]float64
}

// Validate fills an empty Loss and Metric with Kind's defaults and checks c: -kind, and for
// a new run -loss and -metric against it (a resumed run takes its recorded ones), -max-len,
// -pooling and the shared knobs.
func (c *TrainConfig) Validate() error {
	c.fill()
	if err := c.check(); err != nil {
		return err
	}
	if err := runs.CheckPooling(c.Pooling); err != nil {
		return err
	}
	return c.Head.Check()
}

// fill fills an empty Loss and Metric with Kind's defaults.
func (c *TrainConfig) fill() {
	if c.Loss == "" {
		c.Loss = DefaultLoss(c.Kind)
	}
	if c.Metric == "" {
		c.Metric = DefaultMetric(c.Kind)
	}
}

func (c *TrainConfig) check() error {
	if c.Kind != KindQueryType && c.Kind != KindMLC {
		return fmt.Errorf("-kind %q: want querytype or mlc", c.Kind)
	}
	switch {
	case c.HeadInit != "" && c.HeadInit != HeadInitRandom && c.HeadInit != HeadInitTools:
		return fmt.Errorf("-head-init %q: want %s or %s", c.HeadInit, HeadInitRandom, HeadInitTools)
	case c.HeadInit == HeadInitTools && c.Kind != KindMLC:
		return fmt.Errorf("-head-init %s: -kind %s has no tools to imprint (want -kind mlc)", HeadInitTools, c.Kind)
	case c.FreezeUntrained && c.Kind != KindMLC:
		return fmt.Errorf("-freeze-untrained: -kind %s has no tool outputs (want -kind mlc)", c.Kind)
	}
	if err := runs.CheckMaxLen(c.MaxLen, 2, "[CLS], [SEP]"); err != nil || c.Resume {
		return err
	}
	if c.Kind == KindMLC {
		if c.Loss != "bce" && c.Loss != "softmax" {
			return fmt.Errorf("-loss %q: -kind mlc wants bce or softmax", c.Loss)
		}
		return metrics.CheckDevMetric(c.Metric)
	}
	if c.Loss != "ce" && c.Loss != "bce" {
		return fmt.Errorf("-loss %q: -kind querytype wants ce or bce", c.Loss)
	}
	switch c.Metric {
	case "accuracy", "balanced_accuracy", "acc_single", "acc_multi":
		return nil
	}
	return fmt.Errorf("-metric %q: -kind querytype wants accuracy, balanced_accuracy, acc_single or acc_multi", c.Metric)
}

// Train trains a classifier into cfg.RunDir (or resumes it) on a dev split (the resumed
// run's, the -first-stage run's, else carved with Dev and Seed); then, unless cfg.Test is
// empty, evaluates it on that split, prints the report and writes test_metrics.json.
func Train(ctx context.Context, cfg TrainConfig) (*Result, error) {
	cfg.fill() // the kind's loss and metric, as a run records them
	d, s, err := runs.Begin(&cfg, &cfg.Head, "classifier", cfg.Data, cfg.Args)
	if err != nil {
		return nil, err
	}
	bk, tr, dev := s.Backend, s.Train, s.Dev
	store := s.Store()
	mc, tok, err := runs.Model(s, store, ConfigFile, Unmarshal, false, func(bc encoder.Config) *Config {
		pool, bc := HeadPoolingOf(bc, cfg.Pooling)
		mc := &Config{Kind: cfg.Kind, Encoder: bc, MaxLen: cfg.MaxLen, LossKind: cfg.Loss, Pooling: pool}
		if cfg.Kind == KindMLC {
			mc.Labels = ToolLabels(d)
		} else {
			mc.Labels = []string{LabelSingle, LabelMulti}
		}
		return mc
	})
	if err != nil {
		return nil, err
	}
	files, err := s.ModelFiles(ConfigFile, mc, tok)
	if err != nil {
		return nil, err
	}
	if cfg.HeadInit == HeadInitTools && !cfg.Resume {
		if err := Imprint(mc, store, tok, bk, d, cfg.Batch); err != nil {
			return nil, err
		}
		fmt.Fprintf(s.Log, "head imprinted with the %d tools' pooled embeddings (%s pooling, logits 20 x cosine)\n", len(mc.Labels), HeadPooling(mc.Pooling))
	}
	task := &Task{Cfg: mc, Data: d, Train: tr, Dev: dev, Tok: tok, Backend: bk, BatchSize: cfg.Batch, Seed: cfg.Seed, ExtraFiles: files,
		FreezeUntrained: cfg.FreezeUntrained}
	if err := task.Prepare(); err != nil {
		return nil, err
	}
	if cfg.FreezeUntrained {
		fmt.Fprintf(s.Log, "-freeze-untrained: %d of %d tools have no training query: their outputs get no gradient\n", len(task.Frozen()), mc.Outputs())
	}
	tc, steps := s.TrainConfig(task, HeadVars...)
	multi := 0
	for _, m := range QueryTypes(d, tr) {
		if m {
			multi++
		}
	}
	fmt.Fprintf(s.Log, "%s\nclassifier %s: %s, %d layers, hidden %d, vocab %d, %d outputs, %s head, %s loss, %d train queries (%d multi-tool), %d dev, %d steps -> %s\n",
		d.Stats(), mc.Kind, mc.Encoder.ModelType(), mc.Encoder.Layers(), mc.Encoder.Hidden(), mc.Encoder.Vocab(), mc.Outputs(), HeadPooling(mc.Pooling), mc.LossKind,
		len(tr.Judged()), multi, len(dev.Queries), steps, cfg.RunDir)
	sum, err := s.Run(store, task, tc)
	if err != nil {
		return nil, err
	}
	res := &Result{RunDir: cfg.RunDir, Summary: sum}
	if cfg.Test == "" {
		return res, nil
	}
	mod, err := LoadRun(cfg.RunDir, bk)
	if err != nil {
		return nil, err
	}
	var out any
	if mc.Kind == KindMLC {
		r, err := NewRanker(mod, d)
		if err != nil {
			return nil, err
		}
		rep, err := metrics.Run(ctx, d, cfg.Test, r, metrics.DefaultKs)
		if err != nil {
			return nil, err
		}
		rep.Dataset = d.Name + " (mlc)"
		fmt.Fprint(s.Out, rep)
		out, res.Test = rep, &rep
	} else {
		ts, err := d.Split(cfg.Test)
		if err != nil {
			return nil, err
		}
		m, err := TypeMetrics(mod, d, ts)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(s.Out, "%s / %s: query-type accuracy %.2f (balanced %.2f; single-tool %.2f of %.0f, multi-tool %.2f of %.0f)\n", d.Name, cfg.Test,
			m["accuracy"], m["balanced_accuracy"], m["acc_single"], m["n_single"], m["acc_multi"], m["n_multi"])
		out, res.Types = m, m
	}
	return res, rundir.WriteJSON(cfg.RunDir, "test_metrics.json", out)
}

// HeadPoolingOf returns the head pooling of a new model over bc (pool, else DefaultPooling)
// and bc with the pooler layer when the head reads it: a checkpoint without one (deberta-v3
// from the hub, a warm start) gets a new pooler, initialised as the encoder's other dense
// layers, as HF initialises a task model's pooler.
func HeadPoolingOf(bc encoder.Config, pool string) (encoder.Pooling, encoder.Config) {
	p := DefaultPooling(bc)
	if pool != "" {
		p = encoder.Pooling(pool)
	}
	if p == encoder.PoolPooler && !bc.HasPooler() {
		bc = bc.WithPooler(true)
	}
	return p, bc
}
