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
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/bert"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

func loadData(dir string) (*data.Dataset, error) {
	if dir == "" {
		return data.Default()
	}
	return data.Load(dir)
}

func biencoderCmd(args []string) error {
	fs := flag.NewFlagSet("biencoder", flag.ContinueOnError)
	dataDir := fs.String("data", "", "dataset directory (default: the embedded default dataset)")
	runDir := fs.String("run", "", "run directory (default runs/biencoder-<time>)")
	resume := fs.Bool("resume", false, "continue the run in -run from its newest checkpoint")
	initDir := fs.String("init", "", "initialise from a HuggingFace BERT directory (else from scratch)")
	vocabPath := fs.String("vocab", "", "from scratch: a vocab.txt (default: build a WordPiece vocab from the training texts)")
	vocabSize := fs.Int("vocab-size", 8000, "from scratch: size of the built vocabulary")
	layers := fs.Int("layers", 2, "from scratch: layers")
	hidden := fs.Int("hidden", 128, "from scratch: hidden size")
	heads := fs.Int("heads", 4, "from scratch: attention heads")
	inter := fs.Int("intermediate", 0, "from scratch: intermediate size (default 4*hidden)")
	pooling := fs.String("pooling", "mean", "cls, mean or pooler")
	separate := fs.Bool("separate-towers", false, "separate query and tool towers (default: shared)")
	qLen := fs.Int("query-len", 32, "max query tokens")
	tLen := fs.Int("tool-len", 64, "max tool tokens")
	batch := fs.Int("batch", 32, "examples per batch (no two share a query or a tool, when possible)")
	strict := fs.Bool("strict-batches", false, "never repeat a query or tool in a batch, even if batches get small")
	epochs := fs.Int("epochs", 4, "epochs")
	lr := fs.Float64("lr", 5e-4, "peak learning rate (5e-4 from scratch; use ~2e-5 with -init)")
	wd := fs.Float64("weight-decay", 0.01, "AdamW weight decay (not on biases and LayerNorm)")
	warmup := fs.Float64("warmup", 0.1, "warmup fraction of the steps")
	schedule := fs.String("schedule", "linear", "linear, cosine or constant")
	clip := fs.Float64("clip", 1, "global gradient-norm clipping (0: off)")
	accum := fs.Int("accumulate", 1, "micro-batches per optimizer step")
	temp := fs.Float64("temperature", 0.05, "InfoNCE temperature")
	sim := fs.String("similarity", "cosine", "cosine or dot")
	symmetric := fs.Bool("symmetric", false, "add the tool->query InfoNCE term")
	noMask := fs.Bool("no-fn-mask", false, "ablation: no false-negative masking")
	hardNeg := fs.Int("hard-negatives", 0, "mined hard negatives per example (needs -negatives)")
	negFile := fs.String("negatives", "", "mined negatives file (train mine)")
	devFrac := fs.Float64("dev", 0.1, "fraction of training queries held out as dev")
	evalEvery := fs.Int("eval-every", 0, "optimizer steps between dev evaluations (0: each epoch)")
	metric := fs.String("metric", "ndcg@5", "dev metric selecting the best checkpoint")
	patience := fs.Int("patience", 0, "stop after this many evaluations without improvement (0: never)")
	seed := fs.Uint64("seed", 1, "random seed")
	be := fs.String("backend", "", "go (default), onnx, xla:cpu, xla:cuda")
	testSplit := fs.String("test", "test", "split evaluated at the end (empty: none)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d, err := loadData(*dataDir)
	if err != nil {
		return err
	}
	if *runDir == "" {
		if *resume {
			return fmt.Errorf("-resume needs -run")
		}
		*runDir = filepath.Join("runs", "biencoder-"+time.Now().Format("20060102-150405"))
	}
	bk, err := backend.Open(backend.Name(*be))
	if err != nil {
		return err
	}
	trainSplit, dev, err := d.CarveDev("train", *devFrac, int64(*seed))
	if err != nil {
		return err
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(*seed))
	var cfg *biencoder.Config
	var tok *tokenize.Tokenizer
	if *resume {
		b, err := os.ReadFile(filepath.Join(*runDir, biencoder.ConfigFile))
		if err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		if cfg, err = biencoder.Unmarshal(b); err != nil {
			return err
		}
		if tok, err = tokenize.Load(*runDir); err != nil {
			return err
		}
	} else {
		var bc *bert.Config
		if *initDir != "" {
			if bc, err = bert.LoadHF(bert.In(store.RootScope(), ""), *initDir); err != nil {
				return err
			}
			if tok, err = tokenize.Load(*initDir); err != nil {
				return err
			}
			if *separate {
				return fmt.Errorf("-separate-towers with -init is not supported yet: the checkpoint initialises one shared tower")
			}
		} else {
			if *vocabPath != "" {
				tok, err = tokenize.FromVocab(*vocabPath, true)
			} else {
				var texts []string
				for _, t := range d.Tools {
					texts = append(texts, t.Text)
				}
				for _, q := range trainSplit.Queries {
					texts = append(texts, d.Queries[q].Text)
				}
				var vocab []string
				if vocab, err = tokenize.BuildVocab(texts, *vocabSize, 2, true); err == nil {
					tok, err = tokenize.New(vocab, true)
				}
			}
			if err != nil {
				return err
			}
			bc = bert.Default()
			bc.VocabSize, bc.NumHiddenLayers, bc.HiddenSize, bc.NumAttentionHeads = tok.VocabSize(), *layers, *hidden, *heads
			bc.IntermediateSize = *inter
			if bc.IntermediateSize == 0 {
				bc.IntermediateSize = 4 * *hidden
			}
			bc.MaxPositionEmbeddings = max(*qLen, *tLen)
		}
		cfg = &biencoder.Config{BERT: bc, Pooling: bert.Pooling(*pooling), Shared: !*separate, QueryMaxLen: *qLen, ToolMaxLen: *tLen,
			Similarity: *sim, Temperature: *temp, Symmetric: *symmetric, NoMasking: *noMask}
	}
	files, err := biencoder.WriteRunFiles(*runDir, cfg, tok)
	if err != nil {
		return err
	}
	var negs map[int][]int
	if *negFile != "" {
		if negs, err = biencoder.ReadNegatives(*negFile, d); err != nil {
			return err
		}
	}
	task := &biencoder.Task{Cfg: cfg, Data: d, Train: trainSplit, Dev: dev, Tok: tok, Backend: bk, BatchSize: *batch, StrictBatches: *strict,
		Seed: *seed, HardNegatives: *hardNeg, Negatives: negs, ExtraFiles: files}
	if err := task.Prepare(); err != nil {
		return err
	}
	opt := train.DefaultOptimizer()
	opt.LR, opt.WeightDecay, opt.Schedule, opt.ClipNorm, opt.Accumulate = *lr, *wd, *schedule, *clip, *accum
	steps := 0
	for e := 0; e < *epochs; e++ {
		steps += task.Batches(e) / max(*accum, 1)
	}
	opt.Warmup = int(*warmup * float64(steps))
	tc := train.Config{RunDir: *runDir, Seed: *seed, Epochs: *epochs, EvalEvery: *evalEvery, Metric: *metric, Patience: *patience,
		KeepLast: 2, Optimizer: opt, Fingerprint: d.Fingerprint(), Quiet: *quiet}
	fmt.Fprintf(os.Stderr, "%s\nbi-encoder: %d layers, hidden %d, vocab %d, %s pooling, %d train pairs, %d dev queries, %d steps -> %s\n",
		d.Stats(), cfg.BERT.NumHiddenLayers, cfg.BERT.HiddenSize, cfg.BERT.VocabSize, cfg.Pooling, len(trainSplit.Pairs()), len(dev.Queries), steps, *runDir)
	sum, err := train.Run(bk, store, task, tc, *resume)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "trained %d steps in %.0fs; best dev %s %.2f at step %d\n", sum.Steps, sum.Seconds, *metric, sum.BestMetrics[*metric], sum.BestStep)
	if *testSplit == "" {
		return nil
	}
	emb, err := biencoder.LoadRun(*runDir, bk)
	if err != nil {
		return err
	}
	out := map[string]any{}
	for _, vec := range []string{"text", "usage"} {
		r, err := emb.Retriever(d, vec, "train")
		if err != nil {
			return err
		}
		rep, err := metrics.Run(context.Background(), d, *testSplit, r, metrics.DefaultKs)
		if err != nil {
			return err
		}
		rep.Dataset = fmt.Sprintf("%s (tool vectors: %s)", d.Name, vec)
		fmt.Print(rep)
		out[vec] = rep
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return os.WriteFile(filepath.Join(*runDir, "test_metrics.json"), append(b, '\n'), 0o644)
}
