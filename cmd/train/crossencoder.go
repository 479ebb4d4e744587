package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/safetensors"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// headFlags are the flags shared by the cross-encoder and classifier commands.
type headFlags struct {
	fs                                                                              *flag.FlagSet
	dataDir, runDir, retriever, initDir, be, metric, schedule, testSplit, arch      *string
	layers, hidden, heads, inter, maxLen, batch, epochs, evalEvery, patience, accum *int
	lr, wd, warmup, clip, devFrac                                                   *float64
	seed                                                                            *uint64
	resume, quiet, warm                                                             *bool
	// pool is -pooling: the head's input, cls or pooler (empty: the encoder's default).
	pool *string

	// pending is a new run's run.json, written by create when training starts.
	pending *rundir.Meta
	// kind is the run kind setup was called with ("crossencoder", "classifier").
	kind string
}

func addHeadFlags(fs *flag.FlagSet, maxLen, batch, epochs int, metric string) *headFlags {
	return &headFlags{
		fs:        fs,
		dataDir:   cli.Data(fs),
		runDir:    cli.Run(fs, "run directory (default runs/<command>-<time>)"),
		retriever: cli.Retriever(fs),
		initDir:   fs.String("init", "", "initialise the encoder from a HuggingFace BERT or DeBERTa-v2/v3 directory or hub id org/name[@revision] (lr 2e-5 unless given), or from a bi-encoder or pretrain run (its encoder and tokenizer, as -warm-start takes the -retriever's; else from scratch)"),
		arch:      archFlag(fs),
		pool:      fs.String("pooling", "", "head input: cls (the [CLS] state) or pooler (the encoder's pooler layer over [CLS], as HF's XxxForSequenceClassification: BERT dense + tanh, DeBERTa's ContextPooler dense + GELU); default pooler for DeBERTa, cls for BERT"),
		layers:    fs.Int("layers", 2, "from scratch: layers"),
		hidden:    fs.Int("hidden", 128, "from scratch: hidden size"),
		heads:     fs.Int("heads", 4, "from scratch: attention heads"),
		inter:     fs.Int("intermediate", 0, "from scratch: intermediate size (default 4*hidden)"),
		maxLen:    fs.Int("max-len", maxLen, "max tokens per input (specials included)"),
		batch:     fs.Int("batch", batch, "examples per batch"),
		epochs:    fs.Int("epochs", epochs, "epochs"),
		lr:        fs.Float64("lr", 5e-4, "peak learning rate (5e-4 from scratch; ~2e-5 with -init)"),
		wd:        fs.Float64("weight-decay", 0.01, "AdamW weight decay"),
		warmup:    fs.Float64("warmup", 0.1, "warmup fraction of the steps"),
		schedule:  fs.String("schedule", "linear", "linear, cosine or constant"),
		clip:      fs.Float64("clip", 1, "global gradient-norm clipping (0: off)"),
		accum:     fs.Int("accumulate", 1, "micro-batches per optimizer step"),
		devFrac:   fs.Float64("dev", cli.DefaultDev, "without -retriever: fraction of the training queries held out as dev (with -retriever its recorded dev split is used)"),
		seed:      cli.Seed(fs),
		evalEvery: fs.Int("eval-every", 0, "optimizer steps between dev evaluations (0: each epoch)"),
		metric:    cli.Metric(fs, metric),
		patience:  fs.Int("patience", 0, "stop after this many evaluations without improvement (0: never)"),
		be:        cli.Backend(fs),
		testSplit: fs.String("test", "test", "split evaluated at the end (empty: none)"),
		resume:    cli.Resume(fs),
		quiet:     cli.Quiet(fs),
		warm:      fs.Bool("warm-start", false, "initialise the encoder with the -retriever run's trained weights (its sizes and vocabulary; a BERT position table shorter than -max-len is extended with new rows, other encoders cap -max-len at theirs)"),
	}
}

// setup validates the flags (taking a resumed run's recorded ones), resolves the data,
// backend and run directory, and the dev split: the resumed run's, else the -retriever run's
// recorded one, else one carved with -dev and -seed. A new run's run.json is written by
// create, when training starts: a command failing before leaves no run behind.
func (h *headFlags) setup(cmd, kind string) (*data.Dataset, compute.Backend, *data.Split, *data.Split, error) {
	if h.fs.NArg() > 0 {
		return nil, nil, nil, nil, fmt.Errorf("unexpected arguments %q", h.fs.Args())
	}
	meta, err := openRun(h.fs, h.runDir, *h.resume, cmd, kind, kind)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := resolveInit(h.fs, h.initDir, nil, h.lr); err != nil {
		return nil, nil, nil, nil, err
	}
	if err := cli.First(cli.Positive("batch", *h.batch), cli.Positive("epochs", *h.epochs), cli.LR(*h.lr),
		cli.Positive("accumulate", *h.accum), cli.Positive("max-len", *h.maxLen), cli.Fraction("dev", *h.devFrac),
		cli.NonNegative("weight-decay", *h.wd), cli.NonNegative("clip", *h.clip), cli.NonNegative("eval-every", *h.evalEvery),
		cli.NonNegative("patience", *h.patience), checkWarmup(*h.warmup), checkArch(*h.arch)); err != nil {
		return nil, nil, nil, nil, err
	}
	h.kind = kind
	if *h.initDir == "" && !*h.warm {
		if err := cli.First(cli.Positive("layers", *h.layers), cli.Positive("hidden", *h.hidden), cli.Positive("heads", *h.heads),
			cli.NonNegative("intermediate", *h.inter)); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	d, err := cli.LoadData(h.fs)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	bk, err := backend.Open(backend.Name(*h.be))
	if err != nil {
		return nil, nil, nil, nil, err
	}
	var tr, dev *data.Split
	switch {
	case meta != nil:
		tr, dev, _, err = rundir.Splits(*h.runDir, d)
	case *h.retriever != "":
		var parent *rundir.Meta
		if tr, dev, parent, err = rundir.Splits(*h.retriever, d); err != nil {
			break
		}
		if cli.Set(h.fs)["dev"] && *h.devFrac != parent.Split.DevFraction {
			err = fmt.Errorf("-dev %v: the dev split is the -retriever run's (%s: dev %v, seed %d); omit -dev", *h.devFrac, *h.retriever, parent.Split.DevFraction, parent.Split.Seed)
			break
		}
		h.pending = &rundir.Meta{Kind: kind, Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: parent.Split, Parent: *h.retriever, Args: cli.Args(h.fs)}
	default:
		var sp rundir.Split
		if sp, tr, dev, err = rundir.Carve(d, "train", *h.devFrac, int64(*h.seed)); err != nil {
			break
		}
		h.pending = &rundir.Meta{Kind: kind, Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp, Args: cli.Args(h.fs)}
	}
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return d, bk, tr, dev, nil
}

// create writes a new run's run.json (setup made it); a resumed run has one.
func (h *headFlags) create() error {
	if h.pending == nil {
		return nil
	}
	return rundir.Create(*h.runDir, h.pending)
}

// encoder returns the encoder config and tokenizer of a new model: from -init (weights loaded
// into store), from the -retriever run's encoder with -warm-start, or from scratch with the
// retriever run's tokenizer (or a vocabulary built from the training texts when no retriever
// is given).
func (h *headFlags) encoder(store *model.Store, bk compute.Backend, d *data.Dataset, tr *data.Split) (encoder.Config, *tokenize.Tokenizer, error) {
	if *h.warm {
		if *h.initDir != "" {
			return nil, nil, fmt.Errorf("-warm-start and -init are exclusive")
		}
		if *h.retriever == "" {
			return nil, nil, fmt.Errorf("-warm-start needs -retriever RUN")
		}
		return h.fromRun(*h.retriever, "the -retriever run", store, bk)
	}
	if *h.initDir != "" && isBiEncoderRun(*h.initDir) { // a bi-encoder or pretrain run
		return h.fromRun(*h.initDir, *h.initDir, store, bk)
	}
	if *h.initDir != "" {
		bc, err := encoder.LoadHF(store.RootScope(), *h.initDir)
		if err != nil {
			return nil, nil, err
		}
		if err := checkArchOf(h.fs, *h.arch, bc, *h.initDir); err != nil {
			return nil, nil, err
		}
		tok, err := tokenize.Load(*h.initDir)
		if err != nil {
			return nil, nil, err
		}
		if *h.maxLen > bc.MaxPositions() {
			return nil, nil, fmt.Errorf("-max-len %d exceeds the checkpoint's max_position_embeddings %d", *h.maxLen, bc.MaxPositions())
		}
		return bc, tok, nil
	}
	var tok *tokenize.Tokenizer
	var err error
	if *h.retriever != "" {
		tok, err = tokenize.Load(*h.retriever)
	} else {
		var texts []string
		for _, t := range d.Tools {
			texts = append(texts, t.Text)
		}
		for _, q := range tr.Queries {
			texts = append(texts, d.Queries[q].Text)
		}
		var vocab []string
		if vocab, err = tokenize.BuildVocab(texts, 8000, 2, true); err == nil {
			tok, err = tokenize.New(vocab, true)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	bc, err := newEncoder(*h.arch, encoder.Sizes{Vocab: tok.VocabSize(), Layers: *h.layers, Hidden: *h.hidden, Heads: *h.heads,
		Intermediate: *h.inter, MaxPositions: *h.maxLen}, h.kind == "crossencoder") // intermediate 0: 4*hidden
	if err != nil {
		return nil, nil, err
	}
	return bc, tok, nil
}

// fromRun loads the encoder and tokenizer of the bi-encoder (or pretrain) run at run into store
// with warmStart; what names the run in messages. A -max-len beyond an encoder whose positions
// warmStart cannot extend is capped at its positions.
func (h *headFlags) fromRun(run, what string, store *model.Store, bk compute.Backend) (encoder.Config, *tokenize.Tokenizer, error) {
	bc, tok, err := warmStart(run, bk, store, *h.maxLen, *h.seed)
	if err != nil {
		return nil, nil, err
	}
	if err := checkArchOf(h.fs, *h.arch, bc, what); err != nil {
		return nil, nil, err
	}
	if *h.maxLen > bc.MaxPositions() {
		fmt.Fprintf(os.Stderr, "warm start: -max-len %d capped at %s's max_position_embeddings %d\n", *h.maxLen, what, bc.MaxPositions())
		*h.maxLen = bc.MaxPositions()
	}
	return bc, tok, nil
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

// checkPooling validates -pooling: empty (the encoder's default) or a head pooling.
func checkPooling(p string) error {
	if p != "" && p != string(encoder.PoolCLS) && p != string(encoder.PoolPooler) {
		return fmt.Errorf("-pooling %q: want cls or pooler", p)
	}
	return nil
}

// headPooling returns the head pooling of a new model over bc (-pooling, else
// classifier.DefaultPooling) and bc with the pooler layer when the head reads it: a checkpoint
// without one (deberta-v3 from the hub, a warm start) gets a new pooler, initialised as the
// encoder's other dense layers, as HF initialises a task model's pooler.
func (h *headFlags) headPooling(bc encoder.Config) (encoder.Pooling, encoder.Config) {
	p := classifier.DefaultPooling(bc)
	if *h.pool != "" {
		p = encoder.Pooling(*h.pool)
	}
	if p == encoder.PoolPooler && !bc.HasPooler() {
		bc = bc.WithPooler(true)
	}
	return p, bc
}

// checkMaxLen reports an error naming -max-len unless it holds at least the min special tokens.
func checkMaxLen(n, least int, specials string) error {
	if n < least {
		return fmt.Errorf("-max-len %d: must be >= %d (%s)", n, least, specials)
	}
	return nil
}

// loadResume returns the stored config bytes and tokenizer of a run being resumed.
func loadResume(runDir, configFile string) ([]byte, *tokenize.Tokenizer, error) {
	b, err := os.ReadFile(filepath.Join(runDir, configFile))
	if err != nil {
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	tok, err := tokenize.Load(runDir)
	return b, tok, err
}

// trainConfig builds the trainer configuration.
func (h *headFlags) trainConfig(d *data.Dataset, task train.Task, seed uint64) (train.Config, int) {
	opt := train.DefaultOptimizer()
	opt.LR, opt.WeightDecay, opt.Schedule, opt.ClipNorm, opt.Accumulate = *h.lr, *h.wd, *h.schedule, *h.clip, *h.accum
	steps := 0
	for e := 0; e < *h.epochs; e++ {
		steps += task.Batches(e) / max(*h.accum, 1)
	}
	opt.Warmup = int(*h.warmup * float64(steps))
	return train.Config{RunDir: *h.runDir, Seed: seed, Epochs: *h.epochs, EvalEvery: *h.evalEvery, Metric: *h.metric,
		Patience: *h.patience, KeepLast: 2, Optimizer: opt, Fingerprint: d.Fingerprint(), Quiet: *h.quiet}, steps
}

// retrieverCandidates ranks the given queries with a bi-encoder run and returns each one's
// top m tools.
func retrieverCandidates(run string, bk compute.Backend, d *data.Dataset, queries []int, m int) (map[int][]int, error) {
	emb, err := biencoder.LoadRun(run, bk)
	if err != nil {
		return nil, err
	}
	r, err := emb.Retriever(d, "text", "")
	if err != nil {
		return nil, err
	}
	texts := make([]string, len(queries))
	for i, q := range queries {
		texts[i] = d.Queries[q].Text
	}
	rk, err := r.RankTexts(texts, m)
	if err != nil {
		return nil, err
	}
	out := make(map[int][]int, len(queries))
	for i, q := range queries {
		out[q] = rk[i].Tools
	}
	return out, nil
}

// warmStart loads the encoder weights of a bi-encoder run (its query tower) into store, at
// the root in HF layout, and returns its encoder config and tokenizer. A BERT encoder with
// fewer than maxLen absolute positions gets its position table extended to maxLen rows (see
// extendPositions); other encoders keep theirs.
func warmStart(run string, bk compute.Backend, store *model.Store, maxLen int, seed uint64) (encoder.Config, *tokenize.Tokenizer, error) {
	emb, err := biencoder.LoadRun(run, bk)
	if err != nil {
		return nil, nil, err
	}
	bc := emb.Cfg.Encoder.WithPooler(false) // the bi-encoder pools itself; no pooler weights to carry over
	tmp, err := os.MkdirTemp("", "toolret-warm-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	if err := bc.SaveHF(encoder.In(emb.Store.RootScope(), emb.Cfg.TowerBase(biencoder.QueryTower)), tmp, false); err != nil {
		return nil, nil, fmt.Errorf("warm start: %w", err)
	}
	if bc.ModelType() == "bert" && maxLen > bc.MaxPositions() {
		if err := extendPositions(tmp, maxLen, bc.InitRange(), seed); err != nil {
			return nil, nil, fmt.Errorf("warm start from %s: %w", run, err)
		}
		fmt.Fprintf(os.Stderr, "warm start: position table extended from the retriever's %d rows to -max-len %d (rows %d.. initialised N(0, %g))\n",
			bc.MaxPositions(), maxLen, bc.MaxPositions(), bc.InitRange())
	}
	loaded, err := encoder.LoadHF(store.RootScope(), tmp)
	if err != nil {
		return nil, nil, fmt.Errorf("warm start: %w", err)
	}
	return loaded, emb.Tok, nil
}

// positionTable is the tensor of BERT's absolute position embeddings in an HF directory
// written without the model prefix.
const positionTable = "embeddings.position_embeddings.weight"

// extendPositions rewrites the BERT HF directory dir (config.json, model.safetensors in F32,
// tensor names without prefix) for n absolute positions: max_position_embeddings becomes n
// and the position table keeps its rows, followed by new rows drawn from N(0, std) (seeded),
// as a from-scratch BERT initialises them. Copying trained rows instead would give the new
// positions the embedding of another position (row 0 is [CLS]'s).
func extendPositions(dir string, n int, std float64, seed uint64) error {
	cfgPath := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("%s: %w", cfgPath, err)
	}
	old, ok := cfg["max_position_embeddings"].(float64)
	if !ok || int(old) < 1 {
		return fmt.Errorf("%s: max_position_embeddings %v: want a positive number", cfgPath, cfg["max_position_embeddings"])
	}
	if n <= int(old) {
		return fmt.Errorf("%s: extend %d positions to %d: not more", cfgPath, int(old), n)
	}
	wPath := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(wPath)
	if err != nil {
		return err
	}
	var ts []safetensors.Tensor
	found := false
	for _, name := range f.Names() {
		v, shape, err := f.Float32(name)
		if err != nil {
			return err
		}
		if name == positionTable {
			if len(shape) != 2 || shape[0] != int(old) {
				return fmt.Errorf("%s: %s has shape %v, want [%d, hidden]", wPath, name, shape, int(old))
			}
			r := rand.New(rand.NewPCG(seed, 0x706f73))
			ext := make([]float32, n*shape[1])
			copy(ext, v)
			for i := len(v); i < len(ext); i++ {
				ext[i] = float32(r.NormFloat64() * std)
			}
			v, shape, found = ext, []int{n, shape[1]}, true
		}
		ts = append(ts, safetensors.Tensor{Name: name, Shape: shape, Data: v})
	}
	if !found {
		return fmt.Errorf("%s: no tensor %s", wPath, positionTable)
	}
	cfg["max_position_embeddings"] = n
	if b, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		return err
	}
	if err := safetensors.Write(wPath, ts, f.Metadata); err != nil {
		return err
	}
	return rundir.WriteFile(cfgPath, b)
}

func crossencoderCmd(args []string) error {
	fs := flag.NewFlagSet("crossencoder", flag.ContinueOnError)
	h := addHeadFlags(fs, 128, 8, 4, "ndcg@5")
	// A cross-encoder started from random weights learns no query-tool matching in these
	// budgets (its loss stays at the prior's for thousands of steps): it warm-starts from the
	// retriever's encoder unless -warm-start=false, -init or a from-scratch size is given.
	setDefault(fs, "warm-start", "true")
	m := fs.Int("depth", 30, "hard negatives are drawn from the retriever's top -depth tools (also the dev reranking depth; the paper's m)")
	negs := fs.Int("negatives-per-positive", 7, "negatives per positive pair")
	loss := fs.String("loss", "listwise", "listwise (softmax CE over the positive and its negatives) or bce (per pair)")
	devMax := fs.Int("dev-max", 0, "evaluate on at most this many dev queries during training (0: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	h.defaultWarm()
	if *h.retriever == "" && !*h.resume {
		return fmt.Errorf("crossencoder needs -retriever RUN (a trained bi-encoder: hard negatives and dev candidates)")
	}
	if err := cli.First(cli.Positive("depth", *m), cli.Positive("negatives-per-positive", *negs), cli.NonNegative("dev-max", *devMax),
		checkMaxLen(*h.maxLen, 3, "[CLS], [SEP], [SEP]"), cli.CheckMetric(*h.metric)); err != nil {
		return err
	}
	if *loss != "bce" && *loss != "listwise" {
		return fmt.Errorf("-loss %q: want bce or listwise", *loss)
	}
	if err := checkPooling(*h.pool); err != nil {
		return err
	}
	d, bk, tr, dev, err := h.setup("crossencoder", "crossencoder")
	if err != nil {
		return err
	}
	if *h.retriever == "" { // a resumed run records its -retriever
		return fmt.Errorf("resume %s: the run records no -retriever", *h.runDir)
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(*h.seed))
	var cfg *crossencoder.Config
	var tok *tokenize.Tokenizer
	if *h.resume {
		var b []byte
		if b, tok, err = loadResume(*h.runDir, crossencoder.ConfigFile); err != nil {
			return err
		}
		if cfg, err = crossencoder.Unmarshal(b); err != nil {
			return err
		}
	} else {
		bc, t, err := h.encoder(store, bk, d, tr)
		if err != nil {
			return err
		}
		tok = t
		pool, bc := h.headPooling(bc)
		cfg = &crossencoder.Config{Encoder: bc, MaxLen: *h.maxLen, LossKind: *loss, Pooling: pool}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	files, err := rundir.WriteModelFiles(*h.runDir, crossencoder.ConfigFile, cfg.Marshal(), tok)
	if err != nil {
		return err
	}
	evalDev := dev
	if *devMax > 0 && len(dev.Queries) > *devMax {
		evalDev = &data.Split{Name: dev.Name, Queries: dev.Queries[:*devMax], Relevant: dev.Relevant}
	}
	start := time.Now()
	cands, err := retrieverCandidates(*h.retriever, bk, d, append(append([]int(nil), tr.Queries...), evalDev.Queries...), *m)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "retriever top-%d for %d queries in %.0fs\n", *m, len(cands), time.Since(start).Seconds())
	task := &crossencoder.Task{Cfg: cfg, Data: d, Train: tr, Dev: evalDev, Tok: tok, Candidates: cands, Negatives: *negs,
		BatchSize: *h.batch, Backend: bk, Seed: *h.seed, ExtraFiles: files}
	if err := task.Prepare(); err != nil {
		return err
	}
	tc, steps := h.trainConfig(d, task, *h.seed)
	fmt.Fprintf(os.Stderr, "%s\ncross-encoder: %s, %d layers, hidden %d, vocab %d, max len %d, %s head, %s loss, %d train pairs x (1+%d), %d dev queries, %d steps -> %s\n",
		d.Stats(), cfg.Encoder.ModelType(), cfg.Encoder.Layers(), cfg.Encoder.Hidden(), cfg.Encoder.Vocab(), cfg.MaxLen, classifier.HeadPooling(cfg.Pooling), cfg.LossKind, len(tr.Pairs()), *negs, len(evalDev.Queries), steps, *h.runDir)
	if err := h.create(); err != nil {
		return err
	}
	sum, err := train.Run(bk, store, task, tc, *h.resume)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "trained %d steps in %.0fs; best dev %s %.2f at step %d\n", sum.Steps, sum.Seconds, *h.metric, sum.BestMetrics[*h.metric], sum.BestStep)
	if *h.testSplit == "" {
		return nil
	}
	ts, err := d.Split(*h.testSplit)
	if err != nil {
		return err
	}
	texts := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		texts[i] = t.Text
	}
	mod, err := crossencoder.LoadRun(*h.runDir, bk, texts)
	if err != nil {
		return err
	}
	tc2, err := retrieverCandidates(*h.retriever, bk, d, ts.Judged(), *m)
	if err != nil {
		return err
	}
	rep, err := metrics.EvaluateSplit(context.Background(), d, ts, crossencoder.Reranker(mod, retrieve.Fixed(tc2), 0), metrics.DefaultKs)
	if err != nil {
		return err
	}
	rep.Dataset = fmt.Sprintf("%s (cross-encoder reranking of the retriever's top %d)", d.Name, *m)
	fmt.Print(rep)
	return rundir.WriteJSON(*h.runDir, "test_metrics.json", map[string]any{fmt.Sprintf("rerank-%d", *m): rep})
}
