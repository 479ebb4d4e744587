package traincmd

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/internal/runs"
)

// headFlags are the flags shared by the cross-encoder, classifier and refiner commands: the
// fields of runs.Head.
type headFlags struct {
	fs                                                                                        *flag.FlagSet
	dataDir, runDir, retriever, initDir, be, metric, schedule, testSplit, arch                *string
	layers, hidden, heads, inter, maxLen, batch, epochs, maxSteps, evalEvery, patience, accum *int
	lr, headLR, wd, warmup, clip, devFrac                                                     *float64
	seed                                                                                      *uint64
	resume, quiet, warm                                                                       *bool
	devices                                                                                   *int
	maxTime                                                                                   *time.Duration
	// pool is -pooling: the head's input, cls, mean or pooler (empty: the encoder's default).
	pool *string
}

// addHeadFlags registers the flags with the defaults def (a command's DefaultTrainConfig).
func addHeadFlags(fs *flag.FlagSet, def runs.Head) *headFlags {
	return &headFlags{
		fs:        fs,
		dataDir:   cli.Data(fs),
		runDir:    cli.Run(fs, "run directory (default runs/<command>-<time>)"),
		retriever: cli.FirstStage(fs),
		initDir:   fs.String("init", "", "initialise the encoder from a HuggingFace BERT or DeBERTa-v2/v3 directory or hub id org/name[@revision] (lr 2e-5 unless given), or from a bi-encoder or pretrain run (its encoder and tokenizer, as -warm-start takes the -first-stage's; else from scratch)"),
		arch:      archFlag(fs),
		pool:      fs.String("pooling", "", "head input: cls (the [CLS] state), mean (the mean of the token states, as a sentence-transformers model pools: a SetFit-style head over a pre-trained sentence encoder; not exportable in HF layout) or pooler (the encoder's pooler layer over [CLS], as HF's XxxForSequenceClassification: BERT dense + tanh, DeBERTa's ContextPooler dense + GELU); default pooler for DeBERTa, cls for BERT"),
		layers:    fs.Int("layers", def.Layers, "from scratch: layers"),
		hidden:    fs.Int("hidden", def.Hidden, "from scratch: hidden size"),
		heads:     fs.Int("heads", def.Heads, "from scratch: attention heads"),
		inter:     fs.Int("intermediate", def.Intermediate, "from scratch: intermediate size (default 4*hidden)"),
		maxLen:    fs.Int("max-len", def.MaxLen, "max tokens per input (specials included)"),
		batch:     fs.Int("batch", def.Batch, "examples per batch"),
		epochs:    fs.Int("epochs", def.Epochs, "epochs"),
		maxSteps:  fs.Int("max-steps", def.MaxSteps, "stop after this many optimizer steps, the learning-rate schedule fitted to them (0: all of -epochs)"),
		maxTime:   fs.Duration("max-time", def.MaxTime, "stop at the first optimizer step past this wall-clock time since the run began, e.g. 4m (evaluated and checkpointed there; the schedule keeps its length; 0: no limit)"),
		lr:        fs.Float64("lr", def.LR, "peak learning rate (5e-4 from scratch; ~2e-5 with -init)"),
		headLR:    fs.Float64("head-lr", def.HeadLR, "peak learning rate of the head the model adds above its encoder (its weight decay scales with it); e.g. 10-100x -lr over a pre-trained encoder, whose new head otherwise learns at the encoder's rate (0: -lr)"),
		wd:        fs.Float64("weight-decay", def.WeightDecay, "AdamW weight decay"),
		warmup:    fs.Float64("warmup", def.Warmup, "warmup fraction of the steps"),
		schedule:  fs.String("schedule", def.Schedule, "linear, cosine or constant"),
		clip:      fs.Float64("clip", def.Clip, "global gradient-norm clipping (0: off)"),
		accum:     fs.Int("accumulate", def.Accumulate, "micro-batches per optimizer step"),
		devFrac:   fs.Float64("dev", def.Dev, "without -first-stage: fraction of the training queries held out as dev (with -first-stage its recorded dev split is used)"),
		seed:      cli.Seed(fs),
		evalEvery: fs.Int("eval-every", def.EvalEvery, "optimizer steps between dev evaluations (0: each epoch)"),
		metric:    cli.Metric(fs, def.Metric),
		patience:  fs.Int("patience", def.Patience, "stop after this many evaluations without improvement (0: never)"),
		be:        cli.Backend(fs),
		devices:   cli.Devices(fs),
		testSplit: fs.String("test", def.Test, "split evaluated at the end (empty: none)"),
		resume:    cli.Resume(fs),
		quiet:     cli.Quiet(fs),
		warm:      fs.Bool("warm-start", def.WarmStart, "initialise the encoder with the -first-stage run's trained weights (its sizes and vocabulary; a BERT position table shorter than -max-len is extended with new rows, other encoders cap -max-len at theirs)"),
	}
}

// start refuses extra arguments, opens the run directory (a resumed run's recorded flags are
// applied; a new run needs a free directory) and resolves -init.
func (h *headFlags) start(cmd, kind string) error {
	if h.fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", h.fs.Args())
	}
	if _, err := openRun(h.fs, h.runDir, *h.resume, cmd, kind, kind); err != nil {
		return err
	}
	return resolveInit(h.fs, h.initDir, nil, h.lr)
}

// config returns the shared settings the flags give.
func (h *headFlags) config() runs.Head {
	set := cli.Set(h.fs)
	return runs.Head{RunDir: *h.runDir, Resume: *h.resume, Retriever: *h.retriever, Init: *h.initDir, WarmStart: *h.warm,
		Arch: *h.arch, ArchGiven: set["arch"], Pooling: *h.pool, Layers: *h.layers, Hidden: *h.hidden, Heads: *h.heads,
		Intermediate: *h.inter, MaxLen: *h.maxLen, Batch: *h.batch, Epochs: *h.epochs, MaxSteps: *h.maxSteps, MaxTime: *h.maxTime, LR: *h.lr, HeadLR: *h.headLR, WeightDecay: *h.wd,
		Warmup: *h.warmup, Schedule: *h.schedule, Clip: *h.clip, Accumulate: *h.accum, Dev: *h.devFrac, DevGiven: set["dev"],
		Seed: *h.seed, EvalEvery: *h.evalEvery, Metric: *h.metric, Patience: *h.patience, Backend: *h.be, Devices: *h.devices, Test: *h.testSplit,
		Quiet: *h.quiet}
}

// defaultWarm turns a default -warm-start (not given on the command line) off when -init or a
// from-scratch size (-layers, -hidden, -heads, -intermediate) says how to build the encoder.
func (h *headFlags) defaultWarm() {
	set := cli.Set(h.fs)
	if !*h.warm || set["warm-start"] {
		return
	}
	for _, f := range []string{"init", "layers", "hidden", "heads", "intermediate"} {
		if set[f] {
			*h.warm = false
			fmt.Fprintf(os.Stderr, "-%s given: no warm start from the retriever\n", f)
			return
		}
	}
}
