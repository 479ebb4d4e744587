package traincmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/candidates"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/refiner"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// CandidatesFile is the first stage's cached candidate lists in a refiner run.
const candidatesFile = "candidates.json"

// setDefault changes a registered flag's default (not marking it set).
func setDefault(fs *flag.FlagSet, name, v string) {
	f := fs.Lookup(name)
	f.DefValue = v
	_ = f.Value.Set(v)
}

func refinerCmd(args []string) error {
	fs := flag.NewFlagSet("train refiner", flag.ContinueOnError)
	src := fs.String("candidates", "bi-encoder", "first stage whose top N the refiner re-orders: bi-encoder (the -retriever run's text vectors), usage (its Tool2Vec vectors), mlc (-candidates-run MLC_RUN) or bm25")
	srcRun := fs.String("candidates-run", "", "the first stage's run for -candidates mlc (bi-encoder and usage: the -retriever run)")
	n := fs.Int("n", 64, "candidate slots N: the first stage's top N are scored together")
	depth := fs.Int("depth", 100, "first-stage list length cached per query (>= -n; the refined top N is followed by the rest in first-stage order)")
	loss := fs.String("loss", refiner.LossSoftmax, "softmax (multi-positive softmax over the N slots, summed over positives), softmax-norm (divided by the positives) or bce (per slot)")
	missing := fs.String("missing", refiner.MissingInsert, "training lists without a positive the first stage missed: insert (at a random slot) or drop (train on the list as is)")
	order := fs.String("order", refiner.OrderShuffle, "training slot order: shuffle (each epoch) or rank (first-stage order)")
	slotPos := fs.String("slot-positions", refiner.SlotPosNone, "slot position embeddings: none or learned (a [N, hidden] table added to slot i)")
	weight := fs.Float64("first-stage-weight", -1, "rank the top N by (1-w)·z(refiner) + w·z(first stage); -1: choose w in {0, 0.1, ..., 1} on dev after training (0: the refiner alone)")
	h := addHeadFlags(fs, 32, 32, 5, "ndcg@5")
	// The Tool2Vec paper's code: AdamW lr 8e-4, weight decay 0.01, warm-up then cosine.
	setDefault(fs, "lr", "0.0008")
	setDefault(fs, "schedule", "cosine")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	// setup first: a resumed run takes its recorded flags before they are checked.
	d, bk, tr, dev, err := h.setup("refiner", "refiner")
	if err != nil {
		return err
	}
	if *h.retriever == "" {
		return fmt.Errorf("-retriever RUN is required: the bi-encoder run whose Tool2Vec vectors fill the slots (and whose dev split is used)")
	}
	if err := cli.First(cli.Positive("n", *n), cli.Positive("depth", *depth)); err != nil {
		return err
	}
	if *weight != -1 && (*weight < 0 || *weight > 1) {
		return fmt.Errorf("-first-stage-weight %v: want -1 (choose on dev) or a value in [0, 1]", *weight)
	}
	if *depth < *n {
		return fmt.Errorf("-depth %d: must be >= -n %d", *depth, *n)
	}
	if err := checkMaxLen(*h.maxLen, 2, "[CLS], [SEP]"); err != nil {
		return err
	}
	source := candidates.Source{Kind: *src, Run: *srcRun}
	switch *src {
	case "bi-encoder", "usage":
		if *srcRun != "" && *srcRun != *h.retriever {
			return fmt.Errorf("-candidates-run: -candidates %s uses the -retriever run", *src)
		}
		source.Run = *h.retriever
	case "bm25":
		if *srcRun != "" {
			return fmt.Errorf("-candidates-run: -candidates bm25 has no run")
		}
	case "mlc":
		if *srcRun == "" {
			return fmt.Errorf("-candidates mlc needs -candidates-run MLC_RUN")
		}
	}
	if err := source.Check(); err != nil {
		return fmt.Errorf("-candidates: %w", err)
	}
	if source.Kind == "mlc" {
		if err := sameSplit(source.Run, *h.retriever, d); err != nil {
			return err
		}
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(*h.seed))
	var cfg *refiner.Config
	var tok *tokenize.Tokenizer
	if *h.resume {
		var b []byte
		if b, tok, err = loadResume(*h.runDir, refiner.ConfigFile); err != nil {
			return err
		}
		if cfg, err = refiner.Unmarshal(b); err != nil {
			return err
		}
	} else {
		bc, t, err := h.encoder(store, bk, d, tr)
		if err != nil {
			return err
		}
		tok = t
		cfg = &refiner.Config{Encoder: bc.WithPooler(false), MaxLen: *h.maxLen, N: *n, Tools: len(d.Tools), LossKind: *loss,
			SlotPositions: *slotPos, Candidates: source, Vectors: *h.retriever}
	}
	// Tool2Vec vectors of the retriever run over the training part (no dev query).
	vecs, fallback, err := tool2vec(*h.retriever, bk, d, tr)
	if err != nil {
		return err
	}
	cfg.Dim = len(vecs[0])
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := cfg.SetVectors(store, vecs); err != nil {
		return err
	}
	if *missing != refiner.MissingInsert && *missing != refiner.MissingDrop {
		return fmt.Errorf("-missing %q: want insert or drop", *missing)
	}
	if *order != refiner.OrderShuffle && *order != refiner.OrderRank {
		return fmt.Errorf("-order %q: want shuffle or rank", *order)
	}
	// The candidates are cached in the run directory before the run exists (run.json): a
	// failed start leaves at most the cache, which a retry reuses.
	if err := os.MkdirAll(*h.runDir, 0o755); err != nil {
		return err
	}
	queries := append(tr.Judged(), dev.Judged()...)
	start := time.Now()
	lists, computed, err := candidates.Cached(context.Background(), filepath.Join(*h.runDir, candidatesFile), source, func() (retrieve.Ranker, error) {
		r, _, err := candidates.Open(source, d, tr, bk)
		return r, err
	}, d, queries, *depth)
	if err != nil {
		return err
	}
	if computed {
		fmt.Fprintf(os.Stderr, "candidates: %s top %d of %d train+dev queries in %s\n", source, *depth, len(queries), time.Since(start).Round(time.Millisecond))
	}
	task := &refiner.Task{Cfg: cfg, Data: d, Train: tr, Dev: dev, Tok: tok, Backend: bk, BatchSize: *h.batch, Seed: *h.seed,
		Lists: lists, Missing: *missing, Order: *order}
	if err := task.Prepare(); err != nil {
		return err
	}
	if err := h.create(); err != nil {
		return err
	}
	if task.ExtraFiles, err = rundir.WriteModelFiles(*h.runDir, refiner.ConfigFile, cfg.Marshal(), tok); err != nil {
		return err
	}
	tc, steps := h.trainConfig(d, task, *h.seed)
	fmt.Fprintf(os.Stderr, "%s\nrefiner: %s %d layers, hidden %d, vocab %d; N %d over %s; Tool2Vec vectors of %s (%d of %d tools have no training query and keep their text vector); %s loss, missing %s, order %s, slot positions %s; %d train queries, %d dev, %d steps -> %s\n",
		d.Stats(), cfg.Encoder.ModelType(), cfg.Encoder.Layers(), cfg.Encoder.Hidden(), cfg.Encoder.Vocab(), cfg.N, source, *h.retriever,
		fallback, len(d.Tools), cfg.LossKind, *missing, *order, cfg.SlotPositions, len(tr.Judged()), len(dev.Judged()), steps, *h.runDir)
	sum, err := train.Run(bk, store, task, tc, *h.resume)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "trained %d steps in %.0fs; best dev %s %.2f at step %d\n", sum.Steps, sum.Seconds, *h.metric, sum.BestMetrics[*h.metric], sum.BestStep)
	if err := chooseWeight(*h.runDir, *weight, *h.metric, d, dev, lists, bk); err != nil {
		return err
	}
	if *h.testSplit == "" {
		return nil
	}
	return refinerTest(*h.runDir, *h.testSplit, source, *depth, d, tr, bk)
}

// chooseWeight records the first-stage weight of the run's best refiner (refiner.WeightFile):
// w as given, or (w = -1) the one of refiner.Weights that maximises the dev metric.
func chooseWeight(runDir string, w float64, metric string, d *data.Dataset, dev *data.Split, lists candidates.Lists, bk compute.Backend) error {
	rec := refiner.Weight{FirstStageWeight: w, Metric: metric}
	if w == -1 {
		m, err := refiner.LoadRun(runDir, bk)
		if err != nil {
			return err
		}
		m.Cfg.FirstStageWeight = 0
		best, vals, err := m.ChooseWeight(context.Background(), d, dev, lists, metric)
		if err != nil {
			return err
		}
		rec.FirstStageWeight, rec.Weights, rec.Dev = best, refiner.Weights, vals
		var b strings.Builder
		for i, x := range refiner.Weights {
			fmt.Fprintf(&b, " %.1f:%.2f", x, vals[i])
		}
		fmt.Fprintf(os.Stderr, "first-stage weight on dev (%s by w):%s -> w = %.1f\n", metric, b.String(), best)
	}
	return rundir.WriteJSON(runDir, refiner.WeightFile, rec)
}

// refinerTest evaluates the first stage alone and with the run's best refiner on the test
// split (the same candidate lists), prints both and writes test_metrics.json.
func refinerTest(runDir, split string, source candidates.Source, depth int, d *data.Dataset, tr *data.Split, bk compute.Backend) error {
	ts, err := d.Split(split)
	if err != nil {
		return err
	}
	lists, _, err := candidates.Cached(context.Background(), filepath.Join(runDir, candidatesFile), source, func() (retrieve.Ranker, error) {
		r, _, err := candidates.Open(source, d, tr, bk)
		return r, err
	}, d, ts.Judged(), depth)
	if err != nil {
		return err
	}
	m, err := refiner.LoadRun(runDir, bk)
	if err != nil {
		return err
	}
	aloneCfg := *m.Cfg
	aloneCfg.FirstStageWeight = 0
	alone := &refiner.Model{Cfg: &aloneCfg, Tok: m.Tok, Backend: m.Backend, Store: m.Store, Batch: m.Batch}
	rows := []struct {
		name string
		r    retrieve.QueryRanker
	}{{"first stage (" + source.Kind + ")", lists.Ranker()}, {"+ refiner", alone.Lists(lists)}}
	if w := m.Cfg.FirstStageWeight; w > 0 {
		rows = append(rows, struct {
			name string
			r    retrieve.QueryRanker
		}{fmt.Sprintf("+ refiner, first-stage weight %.1f", w), m.Lists(lists)})
	}
	out := map[string]metrics.Report{}
	for _, s := range rows {
		rep, err := metrics.EvaluateSplit(context.Background(), d, ts, s.r, metrics.DefaultKs)
		if err != nil {
			return err
		}
		rep.Dataset = d.Name + " / " + s.name
		rep.Subsets, rep.ToolRecall = nil, nil
		fmt.Print(rep)
		out[s.name] = rep
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return rundir.WriteFile(filepath.Join(runDir, "test_metrics.json"), append(b, '\n'))
}

// tool2vec returns the Tool2Vec vectors of a bi-encoder run's query tower over the training
// queries of train (tools without one keep their text vector; their count is returned).
func tool2vec(run string, bk compute.Backend, d *data.Dataset, train *data.Split) ([][]float32, int, error) {
	emb, err := biencoder.LoadRun(run, bk)
	if err != nil {
		return nil, 0, fmt.Errorf("-retriever: %w", err)
	}
	r, err := emb.RetrieverFrom(d, "usage", train)
	if err != nil {
		return nil, 0, fmt.Errorf("-retriever %s: %w", run, err)
	}
	return r.Tools, r.Fallbacks, nil
}

// sameSplit refuses a first-stage run whose recorded dev split differs from the retriever's:
// its dev queries would be training queries of the other.
func sameSplit(run, retriever string, d *data.Dataset) error {
	a, err := rundir.Read(run)
	if err != nil {
		return fmt.Errorf("-candidates-run: %w", err)
	}
	b, err := rundir.Read(retriever)
	if err != nil {
		return fmt.Errorf("-retriever: %w", err)
	}
	ia, ib := slices.Clone(a.Split.DevIDs), slices.Clone(b.Split.DevIDs)
	slices.Sort(ia)
	slices.Sort(ib)
	if !slices.Equal(ia, ib) {
		return fmt.Errorf("-candidates-run %s: its dev split (%d queries, dev %s seed %s) is not the -retriever run's (%d queries): train it with -retriever %s",
			run, len(ia), strconv.FormatFloat(a.Split.DevFraction, 'g', -1, 64), strconv.FormatInt(a.Split.Seed, 10), len(ib), retriever)
	}
	return nil
}
