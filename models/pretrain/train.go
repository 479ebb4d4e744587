package pretrain

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/runs"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// TrainConfig is the recipe of `train pretrain`: unsupervised pre-training of an encoder on
// the tool corpus (MLM and contrastive), which the bi-encoder, cross-encoder and classifier
// recipes warm-start from. Every flag of the command is a field whose json tag is the flag's
// name and whose help tag its help; the command declares its flags from the fields (package
// internal/flagcfg). The fields tagged json:"-" are operational or set by the command.
// DefaultTrainConfig holds the defaults.
type TrainConfig struct {
	RunDir string `json:"-"` // -run: the run directory (required)
	Resume bool   `json:"-"` // -resume: continue RunDir from its newest checkpoint (the configuration must be the run's: Train names every field that differs)
	// Init is -init: continue pre-training from a HuggingFace BERT or DeBERTa-v2/v3 directory
	// or a bi-encoder (or pretrain) run, its encoder and tokenizer with a new MLM head ("":
	// from scratch). A hub id must be resolved to its directory first (hub.Resolve).
	Init         string `json:"init" help:"continue pre-training from a HuggingFace BERT or DeBERTa-v2/v3 directory or a bi-encoder (or pretrain) run: its encoder and tokenizer, a new MLM head (else from scratch)"`
	Vocab        string `json:"vocab" help:"from scratch: a vocab.txt (default: build a WordPiece vocab from the corpus)"` // -vocab: from scratch, a vocab.txt ("": a WordPiece vocabulary built from the corpus)
	VocabSize    int    `json:"vocab-size" help:"from scratch: size of the built vocabulary"`                              // -vocab-size: from scratch, the size of the built vocabulary (default 8000)
	Layers       int    `json:"layers" help:"from scratch: layers"`                                                        // -layers: from scratch (default 2)
	Hidden       int    `json:"hidden" help:"from scratch: hidden size"`                                                   // -hidden: from scratch (default 128)
	Heads        int    `json:"heads" help:"from scratch: attention heads"`                                                // -heads: from scratch (default 4)
	Intermediate int    `json:"intermediate" help:"from scratch: intermediate size (default 4*hidden)"`                    // -intermediate: from scratch (default 0: 4*Hidden)
	// Arch is -arch: from scratch, bert (default), deberta or wordbag.
	Arch string `json:"arch" help:"from scratch: encoder architecture, bert, deberta (DeBERTa-v3: disentangled attention over log-bucketed relative positions) or wordbag (idf-weighted bag of word vectors, -hidden wide, no layers; bi-encoders only)"`
	// ArchGiven says -arch was given: an encoder from Init must then be of Arch.
	ArchGiven bool `json:"-"`
	MaxLen    int  `json:"max-len" help:"max tokens of an MLM window and of a view (specials included); the encoder's positions from scratch"` // -max-len: tokens of an MLM window and of a view, specials included (default 64)
	// Objective is -objective: mlm, contrastive or both, comma-separated (default
	// "mlm,contrastive"): loss = mlm + ContrastiveWeight × contrastive.
	Objective         string  `json:"objective" help:"mlm, contrastive or both (comma-separated): loss = mlm + -contrastive-weight × contrastive"`
	ContrastiveWeight float64 `json:"contrastive-weight" help:"weight of the contrastive loss"`                                       // -contrastive-weight (default 1)
	MaskRate          float64 `json:"mask-rate" help:"mlm: fraction of a text's tokens predicted (80% [MASK], 10% random, 10% kept)"` // -mask-rate: mlm, fraction of a text's tokens predicted (default 0.15)
	Temperature       float64 `json:"temperature" help:"contrastive: InfoNCE temperature (cosine similarity)"`                        // -temperature: contrastive InfoNCE temperature (default 0.05)
	CropMin           float64 `json:"crop-min" help:"contrastive: shortest crop, a fraction of the text's tokens"`                    // -crop-min: shortest crop, a fraction of the text's tokens (default 0.1)
	CropMax           float64 `json:"crop-max" help:"contrastive: longest crop, a fraction of the text's tokens"`                     // -crop-max: longest crop (default 0.5)
	CropDelete        float64 `json:"crop-delete" help:"contrastive: probability of deleting each token of a crop"`                   // -crop-delete: probability of deleting each token of a crop (default 0.1)
	// Views is -views: ViewsCrop, ViewsFields or ViewsBoth (default).
	Views       string  `json:"views" help:"contrastive: the two views of a text: crop (two random crops), fields (a tool's name and description; crops for other texts) or both (drawn per example)"`
	Batch       int     `json:"batch" help:"texts per batch (in-batch negatives)"`                    // -batch: texts per batch, in-batch negatives (default 64)
	Epochs      int     `json:"epochs" help:"epochs over the corpus"`                                 // -epochs over the corpus (default 10)
	LR          float64 `json:"lr" help:"peak learning rate"`                                         // -lr: peak learning rate (default 5e-4)
	WeightDecay float64 `json:"weight-decay" help:"AdamW weight decay (not on biases and LayerNorm)"` // -weight-decay (default 0.01)
	Warmup      float64 `json:"warmup" help:"warmup fraction of the steps"`                           // -warmup: warmup fraction of the steps (default 0.1)
	Schedule    string  `json:"schedule" help:"linear, cosine or constant"`                           // -schedule: linear (default), cosine or constant
	Clip        float64 `json:"clip" help:"global gradient-norm clipping (0: off)"`                   // -clip: global gradient-norm clipping (default 1; 0: off)
	Accumulate  int     `json:"accumulate" help:"micro-batches per optimizer step"`                   // -accumulate: micro-batches per optimizer step (default 1)
	// Dev is -dev: the fraction of the training queries held out as dev (default 0.1), as a
	// bi-encoder with the same Dev and Seed holds them out: their texts are left out of the
	// corpus and score the dev evaluations.
	Dev       float64 `json:"dev" help:"fraction of the training queries held out as the dev split (model selection)"`
	DevMax    int     `json:"dev-max" help:"evaluate on at most this many dev query texts (0: all)"`                                                // -dev-max: evaluate on at most this many dev query texts (default 1024; 0: all)
	EvalEvery int     `json:"eval-every" help:"optimizer steps between dev evaluations (0: each epoch)"`                                            // -eval-every: optimizer steps between dev evaluations (default 0: each epoch)
	MaxSteps  int     `json:"max-steps" help:"stop after this many optimizer steps, the learning-rate schedule fitted to them (0: all of -epochs)"` // -max-steps: stop after this many optimizer steps, the schedule fitted to them (default 0: all)
	// MaxTime is -max-time: stop at the first step past this wall-clock time (train.Config.MaxTime; 0: none).
	MaxTime time.Duration `json:"max-time" help:"stop at the first optimizer step past this wall-clock time since training began, e.g. 4m (evaluated and checkpointed there; 0: no limit)"`
	// Metric is -metric: contrastive_acc or mlm_acc ("": DefaultMetric(Objective)).
	Metric   string `json:"metric" help:"dev metric selecting the best checkpoint: contrastive_acc (default) or mlm_acc (the default without the contrastive objective)"`
	Patience int    `json:"patience" help:"stop after this many evaluations without improvement (0: never)"` // -patience (default 0: never stop early)
	Seed     uint64 `json:"seed" help:"random seed"`                                                         // -seed (default 1)
	Backend  string `json:"-"`                                                                               // -backend ("": the default)
	Devices  int    `json:"-"`                                                                               // -devices: split each batch over this many devices of Backend (0 or 1: one; train.Config.Devices)
	Quiet    bool   `json:"-"`                                                                               // -quiet: no progress bar
	// Data is the dataset (nil: the embedded default dataset).
	Data *data.Dataset `json:"-"`
	// Args is provenance only: the command's flags as recorded in a new run's run.json.
	Args map[string]string `json:"-"`
	// Stderr receives the messages (nil: os.Stderr); the trainer's progress goes to os.Stderr.
	Stderr io.Writer `json:"-"`
}

// DefaultTrainConfig returns the command's defaults.
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{VocabSize: 8000, Layers: 2, Hidden: 128, Heads: 4, Arch: runs.DefaultArch, MaxLen: 64,
		Objective: "mlm,contrastive", ContrastiveWeight: 1, MaskRate: 0.15, Temperature: 0.05, CropMin: 0.1, CropMax: 0.5,
		CropDelete: 0.1, Views: ViewsBoth, Batch: 64, Epochs: 10, LR: 5e-4, WeightDecay: 0.01, Warmup: 0.1, Schedule: "linear",
		Clip: 1, Accumulate: 1, Dev: rundir.DefaultDev, DevMax: 1024, Seed: rundir.DefaultSeed}
}

// DefaultMetric returns the dev metric of objective when none is given: contrastive_acc,
// mlm_acc without the contrastive objective.
func DefaultMetric(objective string) string {
	if _, con, err := ParseObjectives(objective); err == nil && !con {
		return "mlm_acc"
	}
	return "contrastive_acc"
}

// TimeFile records a pre-training session's speed in its run directory.
const TimeFile = "pretrain_time.json"

// Time is TimeFile: the steps this session trained (from ResumedFrom), its wall-clock
// seconds (evaluations and graph compilations included) and the rates.
type Time struct {
	Steps           int     `json:"steps"`
	Seconds         float64 `json:"seconds"`
	StepsPerSecond  float64 `json:"steps_per_second"`
	StepsPerEpoch   int     `json:"steps_per_epoch"`
	SecondsPerEpoch float64 `json:"seconds_per_epoch"`
	ResumedFrom     int     `json:"resumed_from_step,omitempty"`
}

// Result is what Train did: the run directory, the trainer's summary and the session's speed.
type Result struct {
	RunDir  string
	Summary *train.Summary
	Time    Time
}

// Validate fills an empty Metric (DefaultMetric) and checks c.
func (c *TrainConfig) Validate() error {
	mlm, con, err := ParseObjectives(c.Objective)
	if err != nil {
		return fmt.Errorf("-objective: %w", err)
	}
	if err := check.First(check.Positive("batch", c.Batch), check.Positive("epochs", c.Epochs), check.Positive("lr", c.LR),
		check.Positive("accumulate", c.Accumulate), check.Fraction("dev", c.Dev), check.Fraction("mask-rate", c.MaskRate),
		check.Positive("temperature", c.Temperature), check.Positive("contrastive-weight", c.ContrastiveWeight),
		check.NonNegative("weight-decay", c.WeightDecay), check.NonNegative("clip", c.Clip), check.NonNegative("eval-every", c.EvalEvery),
		check.NonNegative("dev-max", c.DevMax), check.NonNegative("patience", c.Patience), check.NonNegative("max-steps", c.MaxSteps), check.NonNegative("max-time", int64(c.MaxTime)),
		runs.CheckWarmup(c.Warmup), runs.CheckArch(c.Arch), runs.CheckMaxLen(c.MaxLen, 3, "[CLS], a token, [SEP]")); err != nil {
		return err
	}
	if c.Batch < 2 {
		return fmt.Errorf("-batch %d: in-batch negatives need >= 2", c.Batch)
	}
	switch {
	case !(c.CropMin > 0 && c.CropMin <= 1):
		return fmt.Errorf("-crop-min %v: must be in (0, 1]", c.CropMin)
	case !(c.CropMax >= c.CropMin && c.CropMax <= 1):
		return fmt.Errorf("-crop-max %v: must be in [-crop-min %v, 1]", c.CropMax, c.CropMin)
	case !(c.CropDelete >= 0 && c.CropDelete < 1):
		return fmt.Errorf("-crop-delete %v: must be in [0, 1)", c.CropDelete)
	case c.Views != ViewsCrop && c.Views != ViewsFields && c.Views != ViewsBoth:
		return fmt.Errorf("-views %q: want crop, fields or both", c.Views)
	}
	if c.Metric == "" {
		c.Metric = DefaultMetric(c.Objective)
	}
	if c.Init == "" {
		if err := check.First(check.Positive("layers", c.Layers), check.Positive("hidden", c.Hidden), check.Positive("heads", c.Heads),
			check.NonNegative("intermediate", c.Intermediate), check.Positive("vocab-size", c.VocabSize)); err != nil {
			return err
		}
	}
	probe := &Config{MLM: mlm, Contrastive: con}
	if !slices.Contains(probe.Metrics(), c.Metric) {
		return fmt.Errorf("-metric %q: -objective %s reports %s", c.Metric, c.Objective, strings.Join(probe.Metrics(), " or "))
	}
	return nil
}

// Train pre-trains an encoder into cfg.RunDir (or resumes it) on the tools' texts and the
// training queries' (never a dev or test query), evaluating on the dev query texts; the run
// is also a bi-encoder run (biencoder.json: shared tower, mean pooling, cosine) that
// biencoder.LoadRun, and so -init RUN of the other recipes, read. The session's speed is
// written to TimeFile.
func Train(ctx context.Context, cfg TrainConfig) (*Result, error) {
	if cfg.Resume {
		if cfg.Metric == "" { // the objective's, as the run records it
			cfg.Metric = DefaultMetric(cfg.Objective)
		}
		if err := runs.Resume(cfg.RunDir, Kind, Kind, &cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	_, log := runs.Writers(nil, cfg.Stderr)
	mlm, con, _ := ParseObjectives(cfg.Objective)
	d, bk, err := runs.Start(cfg.RunDir, cfg.Resume, Kind, Kind, cfg.Data, cfg.Backend, cfg.Devices)
	if err != nil {
		return nil, err
	}
	// The dev queries are those a bi-encoder with the same -dev and -seed holds out: their
	// texts are left out of the corpus and score the dev evaluations.
	var trainSplit, dev *data.Split
	var pending *rundir.Meta
	if cfg.Resume {
		if trainSplit, dev, _, err = rundir.Splits(cfg.RunDir, d); err != nil {
			return nil, err
		}
	} else {
		var sp rundir.Split
		if sp, trainSplit, dev, err = rundir.Carve(d, "train", cfg.Dev, int64(cfg.Seed)); err != nil {
			return nil, err
		}
		pending = &rundir.Meta{Kind: Kind, Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp}
	}
	corpus, nTools, nQueries := Corpus(d, trainSplit.Queries)
	devTexts := QueryTexts(d, dev.Queries)
	if cfg.DevMax > 0 && len(devTexts) > cfg.DevMax {
		devTexts = devTexts[:cfg.DevMax]
	}
	fields := 0
	for _, x := range corpus {
		if x.Name != "" {
			fields++
		}
	}

	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(cfg.Seed))
	var mc *Config
	var tok *tokenize.Tokenizer
	if cfg.Resume {
		if mc, tok, err = runs.LoadResume(cfg.RunDir, ConfigFile, Unmarshal); err != nil {
			return nil, err
		}
	} else {
		var bc encoder.Config
		if bc, tok, err = newEncoder(&cfg, bk, store, corpus, log); err != nil {
			return nil, err
		}
		mc = &Config{Encoder: bc, MaxLen: cfg.MaxLen, MLM: mlm, Contrastive: con, ContrastiveWeight: cfg.ContrastiveWeight,
			MaskRate: cfg.MaskRate, Temperature: cfg.Temperature, CropMin: cfg.CropMin, CropMax: cfg.CropMax, CropDelete: cfg.CropDelete,
			Views: cfg.Views, Pooling: encoder.PoolMean}
	}
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	if mc.MLM && mc.Encoder.Layers() == 0 {
		return nil, fmt.Errorf("-objective %s: a %s encoder has no layers, so a masked token's state is the [MASK] vector whatever the text: use -objective contrastive", mc.Objectives(), mc.Encoder.ModelType())
	}
	if mc.MLM && tok.MaskID() < 0 {
		return nil, fmt.Errorf("-objective %s: the tokenizer has no %s token", mc.Objectives(), tokenize.MASK)
	}
	files, err := rundir.WriteModelFiles(cfg.RunDir, ConfigFile, mc.Marshal(), tok)
	if err != nil {
		return nil, err
	}
	// The encoder as a bi-encoder (shared tower, mean pooling, cosine): biencoder.LoadRun, and
	// so -init RUN of the bi-encoder, cross-encoder and classifier commands, read it.
	bcfg := mc.BiEncoder().Marshal()
	if err := rundir.WriteFile(filepath.Join(cfg.RunDir, biencoder.ConfigFile), bcfg); err != nil {
		return nil, err
	}
	files[biencoder.ConfigFile] = bcfg

	task := &Task{Cfg: mc, Tok: tok, Backend: bk, Train: corpus, Dev: devTexts, BatchSize: cfg.Batch, Seed: cfg.Seed, ExtraFiles: files}
	if err := task.Prepare(); err != nil {
		return nil, err
	}
	perEpoch := task.Batches(0) / max(cfg.Accumulate, 1)
	tc, steps := train.RunSettings{RunDir: cfg.RunDir, Seed: cfg.Seed, Epochs: cfg.Epochs, MaxSteps: cfg.MaxSteps, MaxTime: cfg.MaxTime, EvalEvery: cfg.EvalEvery,
		Metric: cfg.Metric, Patience: cfg.Patience, LR: cfg.LR, WeightDecay: cfg.WeightDecay, Schedule: cfg.Schedule, Clip: cfg.Clip, Accumulate: cfg.Accumulate,
		Warmup: cfg.Warmup, Fingerprint: d.Fingerprint(), Devices: cfg.Devices, Quiet: cfg.Quiet}.Config(task)
	viewNote := ""
	if mc.Contrastive {
		viewNote = fmt.Sprintf(", views %s (crops %g-%g, deletion %g; %d tools with name/description fields), temperature %g, weight %g",
			mc.Views, mc.CropMin, mc.CropMax, mc.CropDelete, fields, mc.Temperature, mc.ContrastiveWeight)
	}
	fmt.Fprintf(log, "%s\npretrain: %s, %d layers, hidden %d, vocab %d, max len %d, objectives %s%s\n"+
		"corpus: %d tool texts + %d training query texts (no test or dev query); dev: %d held-out dev query texts; %d steps (%d per epoch) -> %s\n",
		d.Stats(), mc.Encoder.ModelType(), mc.Encoder.Layers(), mc.Encoder.Hidden(), mc.Encoder.Vocab(), mc.MaxLen, mc.Objectives(), viewNote,
		nTools, nQueries, task.DevTexts(), steps, perEpoch, cfg.RunDir)
	if pending != nil {
		if err := pending.Record(&cfg, cfg.Args); err != nil {
			return nil, err
		}
		if err := rundir.Create(cfg.RunDir, pending); err != nil {
			return nil, err
		}
	}
	from := 0 // the step this session starts from
	if cfg.Resume {
		if steps, err := checkpoints.List(cfg.RunDir); err == nil && len(steps) > 0 {
			from = steps[len(steps)-1]
		}
	}
	sum, err := train.Run(bk, store, task, tc, cfg.Resume)
	if err != nil {
		return nil, err
	}
	tm := Time{Steps: sum.Steps - from, Seconds: sum.Seconds, StepsPerEpoch: perEpoch, ResumedFrom: from}
	if tm.Steps > 0 && sum.Seconds > 0 {
		tm.StepsPerSecond = float64(tm.Steps) / sum.Seconds
		tm.SecondsPerEpoch = float64(perEpoch) / tm.StepsPerSecond
	}
	if tm.Steps > 0 { // a resumed finished run keeps its record
		if err := rundir.WriteJSON(cfg.RunDir, TimeFile, tm); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(log, "trained %d steps in %.0fs (%.2f steps/s, %.0fs per epoch of %d steps); best dev %s %.2f at step %d (%s)\n",
		tm.Steps, sum.Seconds, tm.StepsPerSecond, tm.SecondsPerEpoch, perEpoch, cfg.Metric, sum.BestMetrics[cfg.Metric], sum.BestStep, devSummary(sum.BestMetrics))
	return &Result{RunDir: cfg.RunDir, Summary: sum, Time: tm}, nil
}

// newEncoder returns the encoder and tokenizer of a new run: from a bi-encoder or pretrain
// run (-init RUN; a MaxLen its positions cannot hold is capped), from a HuggingFace directory,
// or from scratch with -vocab or a vocabulary built from the corpus.
func newEncoder(cfg *TrainConfig, bk compute.Backend, store *model.Store, corpus []Text, log io.Writer) (encoder.Config, *tokenize.Tokenizer, error) {
	switch {
	case cfg.Init != "" && biencoder.IsRun(cfg.Init):
		bc, tok, err := biencoder.WarmStart(cfg.Init, bk, store, cfg.MaxLen, cfg.Seed, log)
		if err != nil {
			return nil, nil, err
		}
		if err := runs.CheckArchOf(cfg.Arch, cfg.ArchGiven, bc, cfg.Init); err != nil {
			return nil, nil, err
		}
		if cfg.MaxLen > bc.MaxPositions() { // an encoder whose positions WarmStart cannot extend
			fmt.Fprintf(log, "-init: -max-len %d capped at the run's max_position_embeddings %d\n", cfg.MaxLen, bc.MaxPositions())
			cfg.MaxLen = bc.MaxPositions()
		}
		return bc, tok, nil
	case cfg.Init != "":
		bc, err := encoder.LoadHF(store.RootScope(), cfg.Init)
		if err != nil {
			return nil, nil, err
		}
		if err := runs.CheckArchOf(cfg.Arch, cfg.ArchGiven, bc, cfg.Init); err != nil {
			return nil, nil, err
		}
		tok, err := tokenize.Load(cfg.Init)
		if err != nil {
			return nil, nil, err
		}
		if cfg.MaxLen > bc.MaxPositions() {
			return nil, nil, fmt.Errorf("-max-len %d exceeds %s's max_position_embeddings %d", cfg.MaxLen, cfg.Init, bc.MaxPositions())
		}
		return bc, tok, nil
	}
	var tok *tokenize.Tokenizer
	var err error
	if cfg.Vocab != "" {
		tok, err = tokenize.FromVocab(cfg.Vocab, true)
	} else {
		texts := make([]string, len(corpus))
		for i, x := range corpus {
			texts[i] = x.Text
		}
		var vocab []string
		if vocab, err = tokenize.BuildVocab(texts, cfg.VocabSize, 2, true); err == nil {
			tok, err = tokenize.New(vocab, true)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	bc, err := runs.NewEncoder(cfg.Arch, encoder.Sizes{Vocab: tok.VocabSize(), Layers: cfg.Layers, Hidden: cfg.Hidden, Heads: cfg.Heads,
		Intermediate: cfg.Intermediate, MaxPositions: cfg.MaxLen}, false) // intermediate 0: 4*hidden
	if err != nil {
		return nil, nil, err
	}
	return bc, tok, nil
}

// devSummary formats dev metrics, sorted by name.
func devSummary(m map[string]float64) string {
	var parts []string
	for _, k := range []string{"contrastive_acc", "contrastive_loss", "mlm_acc", "mlm_loss", "loss"} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %.3f", k, v))
		}
	}
	return strings.Join(parts, ", ")
}
