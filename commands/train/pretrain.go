package traincmd

import (
	"context"
	"flag"
	"fmt"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/pretrain"
)

// pretrainCmd is `train pretrain`: the flags of pretrain.TrainConfig. The bi-encoder,
// cross-encoder and classifier commands warm-start from its runs with -init RUN.
func pretrainCmd(args []string) error {
	fs := flag.NewFlagSet("train pretrain", flag.ContinueOnError)
	def := pretrain.DefaultTrainConfig()
	cli.Data(fs)
	runDir := cli.Run(fs, "run directory (default runs/pretrain-<time>)")
	resume := cli.Resume(fs)
	initDir := fs.String("init", def.Init, "continue pre-training from a HuggingFace BERT or DeBERTa-v2/v3 directory or a bi-encoder (or pretrain) run: its encoder and tokenizer, a new MLM head (else from scratch)")
	sc := scratchFlags(fs, "the corpus")
	maxLen := fs.Int("max-len", def.MaxLen, "max tokens of an MLM window and of a view (specials included); the encoder's positions from scratch")
	objective := fs.String("objective", def.Objective, "mlm, contrastive or both (comma-separated): loss = mlm + -contrastive-weight × contrastive")
	conWeight := fs.Float64("contrastive-weight", def.ContrastiveWeight, "weight of the contrastive loss")
	maskRate := fs.Float64("mask-rate", def.MaskRate, "mlm: fraction of a text's tokens predicted (80% [MASK], 10% random, 10% kept)")
	temp := fs.Float64("temperature", def.Temperature, "contrastive: InfoNCE temperature (cosine similarity)")
	cropMin := fs.Float64("crop-min", def.CropMin, "contrastive: shortest crop, a fraction of the text's tokens")
	cropMax := fs.Float64("crop-max", def.CropMax, "contrastive: longest crop, a fraction of the text's tokens")
	cropDel := fs.Float64("crop-delete", def.CropDelete, "contrastive: probability of deleting each token of a crop")
	views := fs.String("views", def.Views, "contrastive: the two views of a text: crop (two random crops), fields (a tool's name and description; crops for other texts) or both (drawn per example)")
	batch := fs.Int("batch", def.Batch, "texts per batch (in-batch negatives)")
	epochs := fs.Int("epochs", def.Epochs, "epochs over the corpus")
	lr := fs.Float64("lr", def.LR, "peak learning rate")
	wd := fs.Float64("weight-decay", def.WeightDecay, "AdamW weight decay (not on biases and LayerNorm)")
	warmup := fs.Float64("warmup", def.Warmup, "warmup fraction of the steps")
	schedule := fs.String("schedule", def.Schedule, "linear, cosine or constant")
	clip := fs.Float64("clip", def.Clip, "global gradient-norm clipping (0: off)")
	accum := fs.Int("accumulate", def.Accumulate, "micro-batches per optimizer step")
	devFrac := cli.Dev(fs)
	devMax := fs.Int("dev-max", def.DevMax, "evaluate on at most this many dev query texts (0: all)")
	evalEvery := fs.Int("eval-every", def.EvalEvery, "optimizer steps between dev evaluations (0: each epoch)")
	maxSteps := fs.Int("max-steps", def.MaxSteps, "stop after this many optimizer steps, the learning-rate schedule fitted to them (0: all of -epochs)")
	maxTime := fs.Duration("max-time", def.MaxTime, "stop at the first optimizer step past this wall-clock time since training began, e.g. 4m (evaluated and checkpointed there; 0: no limit)")
	metric := fs.String("metric", def.Metric, "dev metric selecting the best checkpoint: contrastive_acc (default) or mlm_acc (the default without the contrastive objective)")
	patience := fs.Int("patience", def.Patience, "stop after this many evaluations without improvement (0: never)")
	seed := cli.Seed(fs)
	be := cli.Backend(fs)
	devices := cli.Devices(fs)
	quiet := cli.Quiet(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if _, err := openRun(fs, runDir, *resume, "pretrain", "pretrain", "pretrain"); err != nil {
		return err
	}
	if err := resolveInit(fs, initDir, nil, nil); err != nil {
		return err
	}
	cfg := pretrain.TrainConfig{RunDir: *runDir, Resume: *resume, Init: *initDir, Vocab: *sc.vocab, VocabSize: *sc.vocabSize,
		Layers: *sc.layers, Hidden: *sc.hidden, Heads: *sc.heads, Intermediate: *sc.inter, Arch: *sc.arch, ArchGiven: cli.Set(fs)["arch"],
		MaxLen: *maxLen, Objective: *objective, ContrastiveWeight: *conWeight, MaskRate: *maskRate, Temperature: *temp,
		CropMin: *cropMin, CropMax: *cropMax, CropDelete: *cropDel, Views: *views, Batch: *batch, Epochs: *epochs, LR: *lr,
		WeightDecay: *wd, Warmup: *warmup, Schedule: *schedule, Clip: *clip, Accumulate: *accum, Dev: *devFrac, DevMax: *devMax,
		EvalEvery: *evalEvery, MaxSteps: *maxSteps, MaxTime: *maxTime, Metric: *metric, Patience: *patience, Seed: *seed, Backend: *be, Devices: *devices, Quiet: *quiet}
	if err := cfg.Validate(); err != nil {
		return check.Flag(err) // the library names a setting, the command its flag
	}
	*metric = cfg.Metric // recorded resolved
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	cfg.Data, cfg.Args = d, cli.Args(fs)
	_, err = pretrain.Train(context.Background(), cfg)
	return check.Flag(err)
}
