package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// checkNewRun refuses to start a new run in a directory that already holds one.
func checkNewRun(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, rundir.MetaFile)); err == nil {
		return fmt.Errorf("run directory %s already holds a run: use -resume, or another -run", dir)
	}
	if steps, err := checkpoints.List(dir); err == nil && len(steps) > 0 {
		return fmt.Errorf("run directory %s already has checkpoints: use -resume, or another -run", dir)
	}
	return nil
}

func checkWarmup(w float64) error {
	if !(w >= 0 && w < 1) {
		return fmt.Errorf("-warmup %v: a fraction of the steps, must be in [0, 1)", w)
	}
	return nil
}

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

// trainRegularization returns the -freeze-embeddings and -tool-dropout options. A resumed
// run made before these flags existed (its recorded flags lack them) trained without them:
// giving it one with another value than its default is refused, as the run would change
// what it trains on halfway.
func trainRegularization(fs *flag.FlagSet, meta *rundir.Meta, freeze bool, dropout float64) (biencoder.Regularization, error) {
	if meta != nil {
		set := cli.Set(fs)
		for _, n := range []string{"freeze-embeddings", "tool-dropout"} {
			f := fs.Lookup(n)
			if _, ok := meta.Args[n]; !ok && set[n] && f.Value.String() != f.DefValue {
				return biencoder.Regularization{}, fmt.Errorf("-%s %s: run %s was trained before -%s existed (as -%s %s) and resumes so: omit -%s", n, f.Value, fs.Lookup("run").Value, n, n, f.DefValue, n)
			}
		}
	}
	r := biencoder.Regularization{FreezeEmbeddings: freeze, ToolDropout: dropout}
	if !(dropout >= 0 && dropout < 1) {
		return r, fmt.Errorf("-tool-dropout %v: a probability, must be in [0, 1)", dropout)
	}
	return r, nil
}

func biencoderCmd(args []string) error {
	fs := flag.NewFlagSet("biencoder", flag.ContinueOnError)
	cli.Data(fs)
	runDir := cli.Run(fs, "run directory (default runs/biencoder-<time>)")
	resume := cli.Resume(fs)
	initDir := fs.String("init", "", "initialise from a HuggingFace or sentence-transformers BERT or DeBERTa-v2/v3 directory or hub id org/name[@revision] (lr 2e-5 and the model's pooling unless given), or from a trained bi-encoder run (its shared encoder, tokenizer, pooling and similarity; else from scratch)")
	sc := scratchFlags(fs, "the training texts")
	vocabPath, vocabSize, layers, hidden, heads, inter, arch := sc.vocab, sc.vocabSize, sc.layers, sc.hidden, sc.heads, sc.inter, sc.arch
	pooling := fs.String("pooling", "mean", "cls, mean or pooler")
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
	temp := fs.Float64("temperature", 0.05, "InfoNCE temperature")
	sim := fs.String("similarity", "cosine", "cosine or dot")
	symmetric := fs.Bool("symmetric", false, "add the tool->query InfoNCE term")
	noMask := fs.Bool("no-fn-mask", false, "ablation: no false-negative masking")
	freezeEmb := fs.Bool("freeze-embeddings", false, "query2tool/feedback: do not train the encoder's word (token) embedding table, in every tower (no gradient, optimizer state or weight decay; left out of the clipped gradient norm); position and token-type embeddings still train")
	toolDrop := fs.Float64("tool-dropout", 0, "query2tool/feedback, training only: drop each white-space-separated word of a tool text (positives and hard negatives) with this probability before tokenisation, at least one word kept, drawn anew per (seed, epoch, batch, example); dev/test evaluation and encoding see whole texts")
	toolQueries := fs.Int("tool-queries", 0, toolQueriesUsage)
	hardNeg := fs.Int("hard-negatives", 0, "mined hard negatives per example (needs -negatives)")
	negFile := fs.String("negatives", "", "mined negatives file (train mine)")
	fb := addFeedbackFlags(fs)
	objective := fs.String("objective", biencoder.ObjectiveQuery2Tool, "query2tool (InfoNCE between queries and tool texts) or query2query (the Tool2Vec retriever: triplet loss over training queries; tools are their usage vectors)")
	retriever := cli.Retriever(fs) // query2query: its query embeddings find the triplets (default: BM25 over the query texts)
	posPer := fs.Int("positives-per-query", 4, "query2query: nearest training queries sharing a tool kept per anchor (one example each)")
	negPer := fs.Int("negatives-per-query", 4, "query2query: nearest training queries sharing no tool kept per anchor (one drawn per example and epoch)")
	margin := fs.Float64("margin", 1, "query2query: triplet loss margin (Euclidean distance)")
	devFrac := cli.Dev(fs)
	evalEvery := fs.Int("eval-every", 0, "optimizer steps between dev evaluations (0: each epoch)")
	maxSteps := fs.Int("max-steps", 0, "stop after this many optimizer steps, the learning-rate schedule fitted to them (0: all of -epochs)")
	metric := cli.Metric(fs, "ndcg@5")
	patience := fs.Int("patience", 0, "stop after this many evaluations without improvement (0: never)")
	seed := cli.Seed(fs)
	be := cli.Backend(fs)
	testSplit := fs.String("test", "test", "split evaluated at the end (empty: none)")
	quiet := cli.Quiet(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	meta, err := openRun(fs, runDir, *resume, "biencoder", "biencoder", "bi-encoder")
	if err != nil {
		return err
	}
	if err := resolveInit(fs, initDir, pooling, lr); err != nil {
		return err
	}
	if err := cli.First(cli.Positive("batch", *batch), cli.Positive("epochs", *epochs), cli.LR(*lr),
		cli.Positive("temperature", *temp), cli.Positive("accumulate", *accum), cli.Fraction("dev", *devFrac),
		cli.NonNegative("weight-decay", *wd), cli.NonNegative("clip", *clip), cli.NonNegative("hard-negatives", *hardNeg),
		cli.NonNegative("eval-every", *evalEvery), cli.NonNegative("patience", *patience), cli.CheckMetric(*metric),
		cli.NonNegative("max-steps", *maxSteps), checkWarmup(*warmup), checkArch(*arch)); err != nil {
		return err
	}
	if *initDir == "" {
		if err := sc.check(); err != nil {
			return err
		}
	}
	if *qLen < 2 || *tLen < 2 {
		return fmt.Errorf("-query-len %d, -tool-len %d: each must be >= 2 ([CLS] and [SEP])", *qLen, *tLen)
	}
	if *hardNeg > 0 && *negFile == "" {
		return fmt.Errorf("-hard-negatives %d needs -negatives FILE (train mine)", *hardNeg)
	}
	padding, err := trainPadding(fs, meta, *padMult)
	if err != nil {
		return err
	}
	reg, err := trainRegularization(fs, meta, *freezeEmb, *toolDrop)
	if err != nil {
		return err
	}
	obj, err := biencoder.ParseObjective(*objective)
	if err != nil {
		return fmt.Errorf("-objective: %w", err)
	}
	q2q := obj == biencoder.ObjectiveQuery2Query
	if q2q {
		if err := cli.First(cli.Positive("positives-per-query", *posPer), cli.Positive("negatives-per-query", *negPer),
			cli.Positive("margin", *margin)); err != nil {
			return err
		}
		switch {
		case *hardNeg > 0 || *negFile != "":
			return fmt.Errorf("-hard-negatives and -negatives are tool negatives of -objective %s; %s mines its own (-negatives-per-query)", biencoder.ObjectiveQuery2Tool, obj)
		case *separate:
			return fmt.Errorf("-objective %s trains one shared tower: -separate-towers does not apply", obj)
		case reg != (biencoder.Regularization{}):
			return fmt.Errorf("-freeze-embeddings and -tool-dropout apply to -objective %s (and -feedback) only", biencoder.ObjectiveQuery2Tool)
		}
	} else if *retriever != "" && *fb.file == "" {
		return fmt.Errorf("-retriever is used by -objective %s only (it mines the query triplets), or with -feedback (the collection's retriever, when it moved)", biencoder.ObjectiveQuery2Query)
	}
	if err := fb.check(fs, *hardNeg, *negFile, q2q); err != nil {
		return err
	}
	if err := checkToolQueries(fs, meta, *toolQueries, q2q, *fb.file != ""); err != nil {
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
	var fbData *trainFeedback
	fbT := 0
	if *fb.file != "" {
		if fbData, err = readFeedback(*fb.file, *retriever, d); err != nil {
			return err
		}
		if fbT, err = fbData.iterations(*fb.iterations); err != nil {
			return err
		}
	}
	var trainSplit, dev *data.Split
	var pending *rundir.Meta
	from := "train" // the split the dev queries were carved from
	if meta != nil {
		if trainSplit, dev, _, err = rundir.Splits(*runDir, d); err != nil {
			return err
		}
		from = meta.Split.From
	} else if fbData != nil { // feedback training: the dev split of the collection's retriever
		var parent *rundir.Meta
		if trainSplit, dev, parent, err = rundir.Splits(fbData.retriever, d); err != nil {
			return fmt.Errorf("-feedback: the collection's retriever: %w", err)
		}
		from = parent.Split.From
		if cli.Set(fs)["dev"] && *devFrac != parent.Split.DevFraction {
			return fmt.Errorf("-dev %v: the dev split is the retriever's of -feedback (%s: dev %v, seed %d); omit -dev", *devFrac, fbData.retriever, parent.Split.DevFraction, parent.Split.Seed)
		}
		pending = &rundir.Meta{Kind: "biencoder", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: parent.Split, Parent: fbData.retriever, Args: cli.Args(fs)}
	} else if *retriever != "" { // query2query mining with a first retriever: its dev split
		var parent *rundir.Meta
		if trainSplit, dev, parent, err = rundir.Splits(*retriever, d); err != nil {
			return err
		}
		if cli.Set(fs)["dev"] && *devFrac != parent.Split.DevFraction {
			return fmt.Errorf("-dev %v: the dev split is the -retriever run's (%s: dev %v, seed %d); omit -dev", *devFrac, *retriever, parent.Split.DevFraction, parent.Split.Seed)
		}
		pending = &rundir.Meta{Kind: "biencoder", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: parent.Split, Parent: *retriever, Args: cli.Args(fs)}
	} else {
		var sp rundir.Split
		if sp, trainSplit, dev, err = rundir.Carve(d, "train", *devFrac, int64(*seed)); err != nil {
			return err
		}
		// run.json is written when training starts: a run failing before leaves none behind.
		pending = &rundir.Meta{Kind: "biencoder", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp, Args: cli.Args(fs)}
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
		var bc encoder.Config
		if *initDir != "" && isBiEncoderRun(*initDir) {
			if *separate {
				return fmt.Errorf("-separate-towers with -init is not supported yet: the run initialises one shared tower")
			}
			if bc, tok, err = initFromRun(fs, *initDir, bk, store, max(*qLen, *tLen), *seed, pooling, sim); err != nil {
				return err
			}
			if err := checkArchOf(fs, *arch, bc, *initDir); err != nil {
				return err
			}
		} else if *initDir != "" {
			if bc, err = encoder.LoadHF(store.RootScope(), *initDir); err != nil {
				return err
			}
			if err := checkArchOf(fs, *arch, bc, *initDir); err != nil {
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
			bc, err = newEncoder(*arch, encoder.Sizes{Vocab: tok.VocabSize(), Layers: *layers, Hidden: *hidden, Heads: *heads,
				Intermediate: *inter, MaxPositions: max(*qLen, *tLen)}, false) // intermediate 0: 4*hidden
			if err != nil {
				return err
			}
			if ii, ok := bc.(encoder.IDFInit); ok { // word weights start at the tools' idf
				df := make([]int, tok.VocabSize())
				for _, t := range d.Tools {
					seen := map[int32]bool{}
					for _, id := range tok.Single(t.Text, *tLen) {
						if !seen[id] {
							seen[id] = true
							df[id]++
						}
					}
				}
				bc = ii.WithIDF(df, len(d.Tools))
			}
		}
		cfg = &biencoder.Config{Encoder: bc, Pooling: encoder.Pooling(*pooling), Shared: !*separate, QueryMaxLen: *qLen, ToolMaxLen: *tLen,
			Similarity: *sim, Temperature: *temp, Symmetric: *symmetric, NoMasking: *noMask}
		if q2q {
			cfg.Objective, cfg.Margin = obj, *margin
		}
		if fbData != nil {
			cfg.Marker = *fb.marker
		}
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
	var task train.Task
	examples := fmt.Sprintf("%d train pairs", len(trainSplit.Pairs()))
	if q2q {
		ns, err := queryTriplets(*runDir, *resume, d, trainSplit, *retriever, bk, *posPer, *negPer)
		if err != nil {
			return err
		}
		qt := &biencoder.QueryTask{Cfg: cfg, Data: d, Train: trainSplit, Dev: dev, Tok: tok, Backend: bk, BatchSize: *batch,
			Seed: *seed, Triplets: ns, Padding: padding, ExtraFiles: files}
		if err := qt.Prepare(); err != nil {
			return err
		}
		task, examples = qt, fmt.Sprintf("%d query triplets (%s, margin %v)", qt.Examples(), obj, cfg.Margin)
	} else if fbData != nil {
		loops, err := fbData.loopsOf(d, trainSplit, from, fbT)
		if err != nil {
			return err
		}
		ft := &biencoder.FeedbackTask{Cfg: cfg, Data: d, Train: trainSplit, Dev: dev, Tok: tok, Backend: bk, BatchSize: *batch, StrictBatches: *strict,
			Seed: *seed, Loops: loops, Iterations: fbT, Alpha: *fb.alpha, Joint: *fb.joint, HardNegatives: *fb.hardNegs, Padding: padding, ExtraFiles: files, Reg: reg}
		if err := ft.Prepare(); err != nil {
			return err
		}
		if err := fbData.record(*runDir, *fb.file, fbT, *resume); err != nil {
			return err
		}
		task, examples = ft, ft.Describe()
	} else {
		bt := &biencoder.Task{Cfg: cfg, Data: d, Train: trainSplit, Dev: dev, Tok: tok, Backend: bk, BatchSize: *batch, StrictBatches: *strict,
			Seed: *seed, HardNegatives: *hardNeg, Negatives: negs, Padding: padding, ExtraFiles: files, Reg: reg, ToolQueries: *toolQueries}
		if err := bt.Prepare(); err != nil {
			return err
		}
		task = bt
		if s := bt.ToolQueriesSummary(); s != "" {
			examples += " + " + s
		}
	}
	opt := train.DefaultOptimizer()
	opt.LR, opt.WeightDecay, opt.Schedule, opt.ClipNorm, opt.Accumulate = *lr, *wd, *schedule, *clip, *accum
	steps := 0
	for e := 0; e < *epochs; e++ {
		steps += task.Batches(e) / max(*accum, 1)
	}
	if *maxSteps > 0 && *maxSteps < steps {
		steps = *maxSteps
	}
	opt.Warmup = int(*warmup * float64(steps))
	tc := train.Config{RunDir: *runDir, Seed: *seed, Epochs: *epochs, MaxSteps: *maxSteps, EvalEvery: *evalEvery, Metric: *metric, Patience: *patience,
		KeepLast: 2, Optimizer: opt, Fingerprint: d.Fingerprint(), Quiet: *quiet}
	if reg != (biencoder.Regularization{}) {
		fmt.Fprintf(os.Stderr, "regularisation: %s\n", reg)
	}
	fmt.Fprintf(os.Stderr, "%s\nbi-encoder: %d layers, hidden %d, vocab %d, %s pooling, %s, %d dev queries, %d steps -> %s\n",
		d.Stats(), cfg.Encoder.Layers(), cfg.Encoder.Hidden(), cfg.Encoder.Vocab(), cfg.Pooling, examples, len(dev.Queries), steps, *runDir)
	if pending != nil {
		pending.Args = cli.Args(fs) // -init RUN may have set -pooling and -similarity
		if err := rundir.Create(*runDir, pending); err != nil {
			return err
		}
	}
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
	vecs := []string{"text", "usage"}
	if cfg.Marker != "" { // usage vectors average unmarked training queries: not for an iteration-aware run
		vecs = vecs[:1]
	}
	for _, vec := range vecs {
		r, err := emb.Retriever(d, vec, "train")
		if err != nil {
			return err
		}
		var rk retrieve.Ranker = r
		if cfg.Marker != "" { // an iteration-aware run: round 0's ranking
			rk = biencoder.Marked{R: r, Marker: cfg.Marker}
		}
		rep, err := metrics.Run(context.Background(), d, *testSplit, rk, metrics.DefaultKs)
		if err != nil {
			return err
		}
		if n := r.UsageNote(); n != "" {
			fmt.Println(n)
		}
		rep.Dataset = fmt.Sprintf("%s (tool vectors: %s)", d.Name, vec)
		fmt.Print(rep)
		out[vec] = rep
	}
	return rundir.WriteJSON(*runDir, "test_metrics.json", out)
}
