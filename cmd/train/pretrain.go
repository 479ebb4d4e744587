package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/models/pretrain"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// pretrainCmd is `train pretrain`: unsupervised pre-training of an encoder on the tool corpus
// (package pretrain) that the bi-encoder, cross-encoder and classifier commands warm-start
// from with -init RUN.
func pretrainCmd(args []string) error {
	fs := flag.NewFlagSet("pretrain", flag.ContinueOnError)
	cli.Data(fs)
	runDir := cli.Run(fs, "run directory (default runs/pretrain-<time>)")
	resume := cli.Resume(fs)
	initDir := fs.String("init", "", "continue pre-training from a HuggingFace BERT or DeBERTa-v2/v3 directory or a bi-encoder (or pretrain) run: its encoder and tokenizer, a new MLM head (else from scratch)")
	sc := scratchFlags(fs, "the corpus")
	vocabPath, vocabSize, layers, hidden, heads, inter, arch := sc.vocab, sc.vocabSize, sc.layers, sc.hidden, sc.heads, sc.inter, sc.arch
	maxLen := fs.Int("max-len", 64, "max tokens of an MLM window and of a view (specials included); the encoder's positions from scratch")
	objective := fs.String("objective", "mlm,contrastive", "mlm, contrastive or both (comma-separated): loss = mlm + -contrastive-weight × contrastive")
	conWeight := fs.Float64("contrastive-weight", 1, "weight of the contrastive loss")
	maskRate := fs.Float64("mask-rate", 0.15, "mlm: fraction of a text's tokens predicted (80% [MASK], 10% random, 10% kept)")
	temp := fs.Float64("temperature", 0.05, "contrastive: InfoNCE temperature (cosine similarity)")
	cropMin := fs.Float64("crop-min", 0.1, "contrastive: shortest crop, a fraction of the text's tokens")
	cropMax := fs.Float64("crop-max", 0.5, "contrastive: longest crop, a fraction of the text's tokens")
	cropDel := fs.Float64("crop-delete", 0.1, "contrastive: probability of deleting each token of a crop")
	views := fs.String("views", pretrain.ViewsBoth, "contrastive: the two views of a text: crop (two random crops), fields (a tool's name and description; crops for other texts) or both (drawn per example)")
	batch := fs.Int("batch", 64, "texts per batch (in-batch negatives)")
	epochs := fs.Int("epochs", 10, "epochs over the corpus")
	lr := fs.Float64("lr", 5e-4, "peak learning rate")
	wd := fs.Float64("weight-decay", 0.01, "AdamW weight decay (not on biases and LayerNorm)")
	warmup := fs.Float64("warmup", 0.1, "warmup fraction of the steps")
	schedule := fs.String("schedule", "linear", "linear, cosine or constant")
	clip := fs.Float64("clip", 1, "global gradient-norm clipping (0: off)")
	accum := fs.Int("accumulate", 1, "micro-batches per optimizer step")
	devFrac := cli.Dev(fs)
	devMax := fs.Int("dev-max", 1024, "evaluate on at most this many dev query texts (0: all)")
	evalEvery := fs.Int("eval-every", 0, "optimizer steps between dev evaluations (0: each epoch)")
	maxSteps := fs.Int("max-steps", 0, "stop after this many optimizer steps, the learning-rate schedule fitted to them (0: all of -epochs)")
	metric := fs.String("metric", "", "dev metric selecting the best checkpoint: contrastive_acc (default) or mlm_acc (the default without the contrastive objective)")
	patience := fs.Int("patience", 0, "stop after this many evaluations without improvement (0: never)")
	seed := cli.Seed(fs)
	be := cli.Backend(fs)
	quiet := cli.Quiet(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	meta, err := openRun(fs, runDir, *resume, "pretrain", "pretrain", "pretrain")
	if err != nil {
		return err
	}
	if err := resolveInit(fs, initDir, nil, nil); err != nil {
		return err
	}
	mlm, con, err := pretrain.ParseObjectives(*objective)
	if err != nil {
		return fmt.Errorf("-objective: %w", err)
	}
	if err := cli.First(cli.Positive("batch", *batch), cli.Positive("epochs", *epochs), cli.LR(*lr),
		cli.Positive("accumulate", *accum), cli.Fraction("dev", *devFrac), cli.Fraction("mask-rate", *maskRate),
		cli.Positive("temperature", *temp), cli.Positive("contrastive-weight", *conWeight),
		cli.NonNegative("weight-decay", *wd), cli.NonNegative("clip", *clip), cli.NonNegative("eval-every", *evalEvery),
		cli.NonNegative("dev-max", *devMax), cli.NonNegative("patience", *patience), cli.NonNegative("max-steps", *maxSteps), checkWarmup(*warmup), checkArch(*arch),
		checkMaxLen(*maxLen, 3, "[CLS], a token, [SEP]")); err != nil {
		return err
	}
	if *batch < 2 {
		return fmt.Errorf("-batch %d: in-batch negatives need >= 2", *batch)
	}
	switch {
	case !(*cropMin > 0 && *cropMin <= 1):
		return fmt.Errorf("-crop-min %v: must be in (0, 1]", *cropMin)
	case !(*cropMax >= *cropMin && *cropMax <= 1):
		return fmt.Errorf("-crop-max %v: must be in [-crop-min %v, 1]", *cropMax, *cropMin)
	case !(*cropDel >= 0 && *cropDel < 1):
		return fmt.Errorf("-crop-delete %v: must be in [0, 1)", *cropDel)
	case *views != pretrain.ViewsCrop && *views != pretrain.ViewsFields && *views != pretrain.ViewsBoth:
		return fmt.Errorf("-views %q: want crop, fields or both", *views)
	}
	if *metric == "" {
		*metric = "contrastive_acc"
		if !con {
			*metric = "mlm_acc"
		}
	}
	if *initDir == "" {
		if err := sc.check(); err != nil {
			return err
		}
	}
	probe := &pretrain.Config{MLM: mlm, Contrastive: con}
	if !slices.Contains(probe.Metrics(), *metric) {
		return fmt.Errorf("-metric %q: -objective %s reports %s", *metric, *objective, strings.Join(probe.Metrics(), " or "))
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	bk, err := backend.Open(backend.Name(*be))
	if err != nil {
		return err
	}
	// The dev queries are those a bi-encoder with the same -dev and -seed holds out: their
	// texts are left out of the corpus and score the dev evaluations.
	var trainSplit, dev *data.Split
	var pending *rundir.Meta
	if meta != nil {
		if trainSplit, dev, _, err = rundir.Splits(*runDir, d); err != nil {
			return err
		}
	} else {
		var sp rundir.Split
		if sp, trainSplit, dev, err = rundir.Carve(d, "train", *devFrac, int64(*seed)); err != nil {
			return err
		}
		pending = &rundir.Meta{Kind: "pretrain", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp, Args: cli.Args(fs)}
	}
	corpus, nTools, nQueries := pretrain.Corpus(d, trainSplit.Queries)
	devTexts := pretrain.QueryTexts(d, dev.Queries)
	if *devMax > 0 && len(devTexts) > *devMax {
		devTexts = devTexts[:*devMax]
	}
	fields := 0
	for _, x := range corpus {
		if x.Name != "" {
			fields++
		}
	}

	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(*seed))
	var cfg *pretrain.Config
	var tok *tokenize.Tokenizer
	if *resume {
		var b []byte
		if b, tok, err = loadResume(*runDir, pretrain.ConfigFile); err != nil {
			return err
		}
		if cfg, err = pretrain.Unmarshal(b); err != nil {
			return err
		}
	} else {
		var bc encoder.Config
		switch {
		case *initDir != "" && isBiEncoderRun(*initDir):
			if bc, tok, err = warmStart(*initDir, bk, store, *maxLen, *seed); err != nil {
				return err
			}
			if err := checkArchOf(fs, *arch, bc, *initDir); err != nil {
				return err
			}
			if *maxLen > bc.MaxPositions() { // an encoder whose positions warmStart cannot extend
				fmt.Fprintf(os.Stderr, "-init: -max-len %d capped at the run's max_position_embeddings %d\n", *maxLen, bc.MaxPositions())
				*maxLen = bc.MaxPositions()
			}
		case *initDir != "":
			if bc, err = encoder.LoadHF(store.RootScope(), *initDir); err != nil {
				return err
			}
			if err := checkArchOf(fs, *arch, bc, *initDir); err != nil {
				return err
			}
			if tok, err = tokenize.Load(*initDir); err != nil {
				return err
			}
			if *maxLen > bc.MaxPositions() {
				return fmt.Errorf("-max-len %d exceeds %s's max_position_embeddings %d", *maxLen, *initDir, bc.MaxPositions())
			}
		default:
			if *vocabPath != "" {
				tok, err = tokenize.FromVocab(*vocabPath, true)
			} else {
				texts := make([]string, len(corpus))
				for i, x := range corpus {
					texts[i] = x.Text
				}
				var vocab []string
				if vocab, err = tokenize.BuildVocab(texts, *vocabSize, 2, true); err == nil {
					tok, err = tokenize.New(vocab, true)
				}
			}
			if err != nil {
				return err
			}
			bc, err = newEncoder(*arch, encoder.Sizes{Vocab: tok.VocabSize(), Layers: *layers, Hidden: *hidden, Heads: *heads,
				Intermediate: *inter, MaxPositions: *maxLen}, false) // intermediate 0: 4*hidden
			if err != nil {
				return err
			}
		}
		cfg = &pretrain.Config{Encoder: bc, MaxLen: *maxLen, MLM: mlm, Contrastive: con, ContrastiveWeight: *conWeight,
			MaskRate: *maskRate, Temperature: *temp, CropMin: *cropMin, CropMax: *cropMax, CropDelete: *cropDel,
			Views: *views, Pooling: encoder.PoolMean}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.MLM && cfg.Encoder.Layers() == 0 {
		return fmt.Errorf("-objective %s: a %s encoder has no layers, so a masked token's state is the [MASK] vector whatever the text: use -objective contrastive", cfg.Objectives(), cfg.Encoder.ModelType())
	}
	if cfg.MLM && tok.MaskID() < 0 {
		return fmt.Errorf("-objective %s: the tokenizer has no %s token", cfg.Objectives(), tokenize.MASK)
	}
	files, err := rundir.WriteModelFiles(*runDir, pretrain.ConfigFile, cfg.Marshal(), tok)
	if err != nil {
		return err
	}
	// The encoder as a bi-encoder (shared tower, mean pooling, cosine): biencoder.LoadRun, and
	// so -init RUN of the bi-encoder, cross-encoder and classifier commands, read it.
	bcfg := cfg.BiEncoder().Marshal()
	if err := rundir.WriteFile(filepath.Join(*runDir, biencoder.ConfigFile), bcfg); err != nil {
		return err
	}
	files[biencoder.ConfigFile] = bcfg

	task := &pretrain.Task{Cfg: cfg, Tok: tok, Backend: bk, Train: corpus, Dev: devTexts, BatchSize: *batch, Seed: *seed, ExtraFiles: files}
	if err := task.Prepare(); err != nil {
		return err
	}
	opt := train.DefaultOptimizer()
	opt.LR, opt.WeightDecay, opt.Schedule, opt.ClipNorm, opt.Accumulate = *lr, *wd, *schedule, *clip, *accum
	perEpoch := task.Batches(0) / max(*accum, 1)
	steps := perEpoch * *epochs
	if *maxSteps > 0 && *maxSteps < steps {
		steps = *maxSteps
	}
	opt.Warmup = int(*warmup * float64(steps))
	tc := train.Config{RunDir: *runDir, Seed: *seed, Epochs: *epochs, MaxSteps: *maxSteps, EvalEvery: *evalEvery, Metric: *metric, Patience: *patience,
		KeepLast: 2, Optimizer: opt, Fingerprint: d.Fingerprint(), Quiet: *quiet}
	viewNote := ""
	if cfg.Contrastive {
		viewNote = fmt.Sprintf(", views %s (crops %g-%g, deletion %g; %d tools with name/description fields), temperature %g, weight %g",
			cfg.Views, cfg.CropMin, cfg.CropMax, cfg.CropDelete, fields, cfg.Temperature, cfg.ContrastiveWeight)
	}
	fmt.Fprintf(os.Stderr, "%s\npretrain: %s, %d layers, hidden %d, vocab %d, max len %d, objectives %s%s\n"+
		"corpus: %d tool texts + %d training query texts (no test or dev query); dev: %d held-out dev query texts; %d steps (%d per epoch) -> %s\n",
		d.Stats(), cfg.Encoder.ModelType(), cfg.Encoder.Layers(), cfg.Encoder.Hidden(), cfg.Encoder.Vocab(), cfg.MaxLen, cfg.Objectives(), viewNote,
		nTools, nQueries, task.DevTexts(), steps, perEpoch, *runDir)
	if pending != nil {
		if err := rundir.Create(*runDir, pending); err != nil {
			return err
		}
	}
	from := 0 // the step this session starts from
	if *resume {
		if steps, err := checkpoints.List(*runDir); err == nil && len(steps) > 0 {
			from = steps[len(steps)-1]
		}
	}
	sum, err := train.Run(bk, store, task, tc, *resume)
	if err != nil {
		return err
	}
	tm := pretrainTime{Steps: sum.Steps - from, Seconds: sum.Seconds, StepsPerEpoch: perEpoch, ResumedFrom: from}
	if tm.Steps > 0 && sum.Seconds > 0 {
		tm.StepsPerSecond = float64(tm.Steps) / sum.Seconds
		tm.SecondsPerEpoch = float64(perEpoch) / tm.StepsPerSecond
	}
	if tm.Steps > 0 { // a resumed finished run keeps its record
		if err := rundir.WriteJSON(*runDir, timeFile, tm); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "trained %d steps in %.0fs (%.2f steps/s, %.0fs per epoch of %d steps); best dev %s %.2f at step %d (%s)\n",
		tm.Steps, sum.Seconds, tm.StepsPerSecond, tm.SecondsPerEpoch, perEpoch, *metric, sum.BestMetrics[*metric], sum.BestStep, devSummary(sum.BestMetrics))
	return nil
}

// timeFile records a pre-training session's speed in its run directory.
const timeFile = "pretrain_time.json"

// pretrainTime is timeFile: the steps this session trained (from ResumedFrom), its wall-clock
// seconds (evaluations and graph compilations included) and the rates.
type pretrainTime struct {
	Steps           int     `json:"steps"`
	Seconds         float64 `json:"seconds"`
	StepsPerSecond  float64 `json:"steps_per_second"`
	StepsPerEpoch   int     `json:"steps_per_epoch"`
	SecondsPerEpoch float64 `json:"seconds_per_epoch"`
	ResumedFrom     int     `json:"resumed_from_step,omitempty"`
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
