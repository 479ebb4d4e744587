package traincmd

import (
	"context"
	"flag"
	"fmt"
	"strconv"

	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/internal/runs"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/recipe"
	"github.com/toolret/toolret/rundir"
)

// checkNewRun refuses to start a new run in a directory that already holds one.
func checkNewRun(dir string) error { return rundir.CheckNew(dir) }

func checkWarmup(w float64) error { return runs.CheckWarmup(w) }

// trainPadding returns the batch padding of -pad-multiple n. A resumed run made before the
// flag existed (its recorded flags lack it) keeps the padding it was trained with, the
// tokenizer's buckets, so that it resumes bit for bit; giving -pad-multiple to it is refused.
func trainPadding(fs *flag.FlagSet, meta *rundir.Meta, n int) (biencoder.Padding, error) {
	if meta != nil {
		if _, ok := meta.Args["pad-multiple"]; !ok {
			if cli.Set(fs)["pad-multiple"] {
				return 0, fmt.Errorf("-pad-multiple %d: run %s was trained before -pad-multiple existed (batches padded to the tokenizer's length buckets) and resumes with that padding: omit -pad-multiple", n, fs.Lookup("run").Value)
			}
			return biencoder.PadTokenizer, nil
		}
	}
	return biencoder.PadMultiple(n)
}

// trainRegularization returns the -freeze-embeddings, -tool-dropout and -freeze-tower
// options. A resumed run made before these flags existed (its recorded flags lack them)
// trained without them: giving it one with another value than its default is refused, as the
// run would change what it trains on halfway.
func trainRegularization(fs *flag.FlagSet, meta *rundir.Meta, freeze bool, dropout float64, tower string) (biencoder.Regularization, error) {
	if meta != nil {
		set := cli.Set(fs)
		for _, n := range []string{"freeze-embeddings", "tool-dropout", "freeze-tower"} {
			f := fs.Lookup(n)
			if _, ok := meta.Args[n]; !ok && set[n] && f.Value.String() != f.DefValue {
				return biencoder.Regularization{}, fmt.Errorf("-%s %s: run %s was trained before -%s existed (as -%s %s) and resumes so: omit -%s", n, f.Value, fs.Lookup("run").Value, n, n, f.DefValue, n)
			}
		}
	}
	r := biencoder.Regularization{FreezeEmbeddings: freeze, ToolDropout: dropout, FreezeTower: tower}
	if !(dropout >= 0 && dropout < 1) {
		return r, fmt.Errorf("-tool-dropout %v: a probability, must be in [0, 1)", dropout)
	}
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("-freeze-tower: %w", err)
	}
	return r, nil
}

func biencoderCmd(args []string) error {
	fs := flag.NewFlagSet("train biencoder", flag.ContinueOnError)
	cli.Data(fs)
	fs.Lookup("data").Usage = "dataset directory (BEIR or Parquet layout), or a list of libraries ENTRY[:WEIGHT],... (a directory, a name in $TOOLRET_DATASETS, or DATASET/SOURCE), each batch from one; default: the embedded default dataset"
	runDir := cli.Run(fs, "run directory (default runs/biencoder-<time>)")
	resume := cli.Resume(fs)
	initDir := fs.String("init", "", "initialise from a HuggingFace or sentence-transformers BERT or DeBERTa-v2/v3 directory or hub id org/name[@revision] (lr 2e-5 and the model's pooling unless given), or from a trained bi-encoder run (its shared encoder, tokenizer, pooling and similarity; else from scratch); with -separate-towers both towers start from it")
	sc := scratchFlags(fs, "the training texts")
	vocabPath, vocabSize, layers, hidden, heads, inter, arch := sc.vocab, sc.vocabSize, sc.layers, sc.hidden, sc.heads, sc.inter, sc.arch
	pooling := fs.String("pooling", "mean", "cls, mean or pooler")
	qPrompt := fs.String("query-prompt", "", "put before every query, in training and by the trained model (sentence-transformers' \"query\" prompt, e.g. bge's query instruction; default: the -init model's, else none; \"\" for none)")
	tPrompt := fs.String("tool-prompt", "", "put before every tool text, in training and by the trained model (sentence-transformers' \"document\" prompt, e.g. e5's \"passage: \"; default: the -init model's, else none)")
	separate := fs.Bool("separate-towers", false, "separate query and tool towers (default: shared)")
	qLen := fs.Int("query-len", 32, "max query tokens")
	tLen := fs.Int("tool-len", 64, "max tool tokens")
	padMult := fs.Int("pad-multiple", biencoder.DefaultPadMultiple, "pad each batch's queries and tools to their longest text rounded up to a multiple of this (0: to -query-len/-tool-len)")
	batch := fs.Int("batch", 32, "examples per batch (no two share a query or a tool, when possible)")
	strict := fs.Bool("strict-batches", false, "never repeat a query or tool in a batch, even if batches get small")
	epochs := fs.Int("epochs", 4, "epochs")
	lr := fs.Float64("lr", 5e-4, "peak learning rate (5e-4 from scratch; use ~2e-5 with -init)")
	wd := fs.Float64("weight-decay", 0.01, "AdamW weight decay (not on biases and LayerNorm)")
	warmup := fs.Float64("warmup", 0.1, "warmup fraction of the steps")
	schedule := fs.String("schedule", "linear", "linear, cosine or constant")
	clip := fs.Float64("clip", 1, "global gradient-norm clipping (0: off)")
	accum := fs.Int("accumulate", 1, "micro-batches per optimizer step")
	miniBatch := fs.Int("mini-batch", 0, "encode each batch this many rows at a time (GradCache, as sentence-transformers' CachedMultipleNegativesRankingLoss: the same step in a mini-batch's memory, one more forward pass; 0: the whole batch)")
	temp := fs.Float64("temperature", 0.05, "InfoNCE temperature")
	sim := fs.String("similarity", "cosine", "cosine or dot")
	symmetric := fs.Bool("symmetric", false, "add the tool->query InfoNCE term")
	noMask := fs.Bool("no-fn-mask", false, "ablation: no false-negative masking")
	freezeEmb := fs.Bool("freeze-embeddings", false, "query2tool/feedback: do not train the encoder's word (token) embedding table, in every tower (no gradient, optimizer state or weight decay; left out of the clipped gradient norm); position and token-type embeddings still train")
	freezeTower := fs.String("freeze-tower", "", "query2tool/feedback with -separate-towers: lock the query or the tool tower at its initial weights (no training, no dropout, no gradient through it; LiT's locked tower). -freeze-tower tool keeps tools embedded as the -init model embeds them, so a tool added after training is embedded like the trained ones")
	toolDrop := fs.Float64("tool-dropout", 0, "query2tool/feedback, training only: drop each white-space-separated word of a tool text (positives and hard negatives) with this probability before tokenisation, at least one word kept, drawn anew per (seed, epoch, batch, example); dev/test evaluation and encoding see whole texts")
	loraRank := fs.Int("lora-rank", 0, "train LoRA adapters of this rank on the encoder's -lora-targets instead of the whole encoder (base weights frozen; export merges them unless -lora-export adapter); 0: off, full fine-tuning")
	loraAlpha := fs.Float64("lora-alpha", 0, "LoRA: the update's scale is alpha/rank (default 2×rank)")
	loraDropout := fs.Float64("lora-dropout", 0, "LoRA: dropout on the adapters' input")
	loraTargets := fs.String("lora-targets", "", "LoRA: comma-separated Linear modules adapted, PEFT's target_modules names (BERT, XLM-RoBERTa: query, key, value, dense; MPNet: q, k, v, o, dense; default: the query and value projections)")
	toolQueries := fs.Int("tool-queries", 0, toolQueriesUsage)
	hardNeg := fs.Int("hard-negatives", 0, "mined hard negatives per example (needs -negatives)")
	negFile := fs.String("negatives", "", "mined negatives file (train mine)")
	usageLog := fs.String("usage", "", "train on a gateway's usage log (serve -library: STATE/usage.jsonl; with serve -database: that postgres:// URL, its usage_log table): each search's query with the tools called from it successfully (or reported a success on) as positives and the tools shown and not called as hard negatives (-hard-negatives, default 1 with -usage) replace -data's training split; failed calls are not positives; docs/learning-from-use.md")
	synthetic := fs.Int("synthetic", 0, "cold start: this many synthetic queries per tool of -data, made from its definitions (name, description, parameters) by templates seeded with -seed, or by -synthetic-llm; they replace -data's training split (or join -usage's examples)")
	synthLLM := fs.String("synthetic-llm", "", "-synthetic: an OpenAI-compatible base URL (e.g. http://127.0.0.1:8080/v1) whose LLM writes the queries instead of the templates (key from $TOOLRET_LLM_API_KEY)")
	synthModel := fs.String("synthetic-llm-model", "", "-synthetic-llm: the model name sent")
	fb := addFeedbackFlags(fs)
	objective := fs.String("objective", biencoder.ObjectiveQuery2Tool, "query2tool (InfoNCE between queries and tool texts) or query2query (the Tool2Vec retriever: triplet loss over training queries; tools are their usage vectors)")
	retriever := cli.FirstStage(fs) // query2query: its query embeddings find the triplets (default: BM25 over the query texts)
	posPer := fs.Int("positives-per-query", 4, "query2query: nearest training queries sharing a tool kept per anchor (one example each)")
	negPer := fs.Int("negatives-per-query", 4, "query2query: nearest training queries sharing no tool kept per anchor (one drawn per example and epoch)")
	margin := fs.Float64("margin", 1, "query2query: triplet loss margin (Euclidean distance)")
	devFrac := cli.Dev(fs)
	evalEvery := fs.Int("eval-every", 0, "optimizer steps between dev evaluations (0: each epoch)")
	maxSteps := fs.Int("max-steps", 0, "stop after this many optimizer steps, the learning-rate schedule fitted to them (0: all of -epochs)")
	maxTime := fs.Duration("max-time", 0, "stop at the first optimizer step past this wall-clock time since training began, e.g. 4m (evaluated and checkpointed there; the schedule keeps its length; 0: no limit)")
	metric := cli.Metric(fs, "ndcg@5")
	patience := fs.Int("patience", 0, "stop after this many evaluations without improvement (0: never)")
	seed := cli.Seed(fs)
	be := cli.Backend(fs)
	devices := cli.Devices(fs)
	testSplit := fs.String("test", "test", "split evaluated at the end (empty: none)")
	quiet := cli.Quiet(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	meta, err := openRun(fs, runDir, *resume, "biencoder", "biencoder", "bi-encoder")
	if err != nil {
		return err
	}
	// The checks of runs made before a flag existed; the library checks the values.
	padding, err := trainPadding(fs, meta, *padMult)
	if err != nil {
		return err
	}
	if _, err := trainRegularization(fs, meta, *freezeEmb, *toolDrop, *freezeTower); err != nil {
		return err
	}
	if err := checkToolQueries(fs, meta, *toolQueries, *objective == biencoder.ObjectiveQuery2Query, *fb.file != ""); err != nil {
		return err
	}
	set := cli.Set(fs)
	if set["dev"] { // 0 is the recipe's "auto": a -dev given must be a fraction
		if err := cli.Fraction("dev", *devFrac); err != nil {
			return err
		}
	}
	auto := func(name string, v, zero any) any { // a flag left unset is the recipe's "auto" zero
		if set[name] {
			return v
		}
		return zero
	}
	hardNegs := *hardNeg
	if *usageLog != "" && !set["hard-negatives"] {
		hardNegs = 1 // the tools shown and not called
	}
	pad := *padMult
	if padding == biencoder.PadTokenizer {
		pad = -1
	}
	prompt := func(name string, v *string) *string { // unset: the -init model's
		if !set[name] {
			return nil
		}
		return v
	}
	cfg := biencoder.TrainConfig{
		Split: biencoder.TrainSplit{Data: fs.Lookup("data").Value.String(), HoldoutTools: flagFloat(fs, "holdout-tools"), HoldoutSeed: flagUint(fs, "holdout-seed"),
			Dev: auto("dev", *devFrac, 0.0).(float64), Test: *testSplit, Usage: *usageLog, Synthetic: *synthetic, SyntheticLLM: *synthLLM, SyntheticLLMModel: *synthModel},
		Parent: biencoder.TrainParent{Init: *initDir, Retriever: *retriever, Feedback: *fb.file},
		Model: biencoder.TrainModel{Arch: auto("arch", *arch, "").(string), Vocab: *vocabPath, VocabSize: *vocabSize, Layers: *layers, Hidden: *hidden,
			Heads: *heads, Intermediate: *inter, Pooling: auto("pooling", *pooling, "").(string), SeparateTowers: *separate, QueryLen: *qLen, ToolLen: *tLen,
			Similarity: auto("similarity", *sim, "").(string), Temperature: *temp, Symmetric: *symmetric, NoFNMask: *noMask, Objective: *objective,
			Margin: *margin, Marker: *fb.marker, QueryPrompt: prompt("query-prompt", qPrompt), ToolPrompt: prompt("tool-prompt", tPrompt),
			LoRARank: *loraRank, LoRAAlpha: *loraAlpha, LoRADropout: *loraDropout, LoRATargets: *loraTargets},
		Training: biencoder.TrainSchedule{Batch: *batch, StrictBatches: *strict, PadMultiple: pad, Epochs: *epochs, LR: auto("lr", *lr, 0.0).(float64),
			WeightDecay: *wd, Warmup: *warmup, Schedule: *schedule, Clip: *clip, Accumulate: *accum, MiniBatch: *miniBatch, FreezeEmbeddings: *freezeEmb, ToolDropout: *toolDrop, FreezeTower: *freezeTower,
			ToolQueries: *toolQueries, HardNegatives: hardNegs, Negatives: *negFile, Iterations: *fb.iterations, Alpha: *fb.alpha,
			FeedbackJoint: *fb.joint, FeedbackHardNegatives: *fb.hardNegs, PositivesPerQuery: *posPer, NegativesPerQuery: *negPer,
			EvalEvery: *evalEvery, MaxSteps: *maxSteps, MaxTime: *maxTime, Metric: *metric, Patience: *patience, Seed: *seed},
		RunDir: *runDir, Resume: *resume, Backend: *be, Devices: *devices, Quiet: *quiet, Args: cli.Args(fs),
	}
	_, err = recipe.BiEncoder(context.Background(), cfg)
	return err
}

// flagFloat and flagUint read a registered flag's value (the held-out-tool view's).
func flagFloat(fs *flag.FlagSet, name string) float64 {
	v, _ := strconv.ParseFloat(fs.Lookup(name).Value.String(), 64)
	return v
}

func flagUint(fs *flag.FlagSet, name string) uint64 {
	v, _ := strconv.ParseUint(fs.Lookup(name).Value.String(), 10, 64)
	return v
}
