package refiner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/candidates"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/progress"
	"github.com/toolret/toolret/internal/runs"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/train"
)

// CandidatesFile is the first stage's cached candidate lists in a refiner run.
const CandidatesFile = "candidates.json"

// TrainConfig is the recipe of `train refiner`, the Tool2Vec paper's ToolRefiner over a first
// stage's top N: every flag of the command as a field (the shared ones in runs.Head).
// DefaultTrainConfig holds the defaults.
type TrainConfig struct {
	runs.Head
	// Candidates is -candidates, the first stage whose top N the refiner re-orders:
	// bi-encoder (the Retriever run's text vectors; default), usage (its Tool2Vec vectors),
	// mlc (CandidatesRun) or bm25.
	Candidates    string `json:"candidates" help:"first stage whose top N the refiner re-orders: bi-encoder (the -first-stage run's text vectors), usage (its Tool2Vec vectors), mlc (-candidates-run MLC_RUN) or bm25"`
	CandidatesRun string `json:"candidates-run" help:"the first stage's run for -candidates mlc (bi-encoder and usage: the -first-stage run)"`                                    // -candidates-run: the first stage's run for mlc (bi-encoder and usage: the Retriever run)
	N             int    `json:"n" help:"candidate slots N: the first stage's top N are scored together"`                                                                         // -n: candidate slots, the first stage's top N scored together (default 64)
	Depth         int    `json:"depth" help:"first-stage list length cached per query (>= -n; the refined top N is followed by the rest in first-stage order)"`                   // -depth: first-stage list length cached per query, >= N (default 100)
	Loss          string `json:"loss" help:"softmax (multi-positive softmax over the N slots, summed over positives), softmax-norm (divided by the positives) or bce (per slot)"` // -loss: LossSoftmax (default), softmax-norm or bce
	Missing       string `json:"missing" help:"training lists without a positive the first stage missed: insert (at a random slot) or drop (train on the list as is)"`            // -missing: MissingInsert (default) or MissingDrop
	Order         string `json:"order" help:"training slot order: shuffle (each epoch) or rank (first-stage order)"`                                                              // -order: OrderShuffle (default) or OrderRank
	SlotPositions string `json:"slot-positions" help:"slot position embeddings: none or learned (a [N, hidden] table added to slot i)"`                                           // -slot-positions: SlotPosNone (default) or SlotPosLearned
	// FirstStageWeight is -first-stage-weight: rank the top N by (1-w)·z(refiner) + w·z(first
	// stage); -1 (default): choose w among Weights on dev after training.
	FirstStageWeight float64 `json:"first-stage-weight" help:"rank the top N by (1-w)·z(refiner) + w·z(first stage); -1: choose w in {0, 0.1, ..., 1} on dev after training (0: the refiner alone)"`
	// Data is the dataset (nil: the embedded default dataset).
	Data *data.Dataset `json:"-"`
	// Args is provenance only: the command's flags as recorded in a new run's run.json.
	Args map[string]string `json:"-"`
}

// DefaultTrainConfig returns the command's defaults: max length 32, batch 32, 5 epochs,
// ndcg@5, and the Tool2Vec paper's optimizer (AdamW lr 8e-4, weight decay 0.01, warm-up
// then cosine).
func DefaultTrainConfig() TrainConfig {
	h := runs.DefaultHead(32, 32, 5, "ndcg@5")
	h.LR, h.Schedule = 8e-4, "cosine"
	return TrainConfig{Head: h, Candidates: "bi-encoder", N: 64, Depth: 100, Loss: LossSoftmax, Missing: MissingInsert,
		Order: OrderShuffle, SlotPositions: SlotPosNone, FirstStageWeight: -1}
}

// Result is what Train did: the run directory, the trainer's summary, the first-stage weight
// recorded (WeightFile) and, with a test split, the reports of the first stage alone and with
// the refiner, by row name.
type Result struct {
	RunDir  string
	Summary *train.Summary
	Weight  Weight
	Test    map[string]metrics.Report
}

// Validate checks c: the shared knobs, the Retriever, the slots and depth, the first stage
// (an mlc run must share the Retriever's dev split) and the training options.
func (c *TrainConfig) Validate() error {
	if err := c.Head.Check(); err != nil {
		return err
	}
	if c.Retriever == "" {
		return fmt.Errorf("-first-stage RUN is required: the bi-encoder run whose Tool2Vec vectors fill the slots (and whose dev split is used)")
	}
	if err := check.First(check.Positive("n", c.N), check.Positive("depth", c.Depth)); err != nil {
		return err
	}
	if c.FirstStageWeight != -1 && (c.FirstStageWeight < 0 || c.FirstStageWeight > 1) {
		return fmt.Errorf("-first-stage-weight %v: want -1 (choose on dev) or a value in [0, 1]", c.FirstStageWeight)
	}
	if c.Depth < c.N {
		return fmt.Errorf("-depth %d: must be >= -n %d", c.Depth, c.N)
	}
	if err := runs.CheckMaxLen(c.MaxLen, 2, "[CLS], [SEP]"); err != nil {
		return err
	}
	source, err := c.source()
	if err != nil {
		return err
	}
	if source.Kind == "mlc" {
		if err := sameSplit(source.Run, c.Retriever); err != nil {
			return err
		}
	}
	if c.Missing != MissingInsert && c.Missing != MissingDrop {
		return fmt.Errorf("-missing %q: want insert or drop", c.Missing)
	}
	if c.Order != OrderShuffle && c.Order != OrderRank {
		return fmt.Errorf("-order %q: want shuffle or rank", c.Order)
	}
	return nil
}

// source returns the first stage of -candidates and -candidates-run.
func (c *TrainConfig) source() (candidates.Source, error) {
	source := candidates.Source{Kind: c.Candidates, Run: c.CandidatesRun}
	switch c.Candidates {
	case "bi-encoder", "usage":
		if c.CandidatesRun != "" && c.CandidatesRun != c.Retriever {
			return source, fmt.Errorf("-candidates-run: -candidates %s uses the -first-stage run", c.Candidates)
		}
		source.Run = c.Retriever
	case "bm25":
		if c.CandidatesRun != "" {
			return source, fmt.Errorf("-candidates-run: -candidates bm25 has no run")
		}
	case "mlc":
		if c.CandidatesRun == "" {
			return source, fmt.Errorf("-candidates mlc needs -candidates-run MLC_RUN")
		}
	}
	if err := source.Check(); err != nil {
		return source, fmt.Errorf("-candidates: %w", err)
	}
	return source, nil
}

// Train trains a refiner into cfg.RunDir (or resumes it) over the first stage's cached top
// Depth (CandidatesFile) of the training and dev queries of the Retriever run's dev split,
// its slots filled with the Retriever run's Tool2Vec vectors; records the first-stage weight
// (WeightFile, chosen on dev for -1); then, unless cfg.Test is empty, evaluates the first
// stage alone and with the refiner on that split, prints the reports and writes
// test_metrics.json.
func Train(ctx context.Context, cfg TrainConfig) (*Result, error) {
	d, s, err := runs.Begin(&cfg, &cfg.Head, "refiner", cfg.Data, cfg.Args)
	if err != nil {
		return nil, err
	}
	source, _ := cfg.source()
	bk, tr, dev := s.Backend, s.Train, s.Dev
	store := s.Store()
	mc, tok, err := runs.Model(s, store, ConfigFile, Unmarshal, false, func(bc encoder.Config) *Config {
		return &Config{Encoder: bc.WithPooler(false), MaxLen: cfg.MaxLen, N: cfg.N, Tools: len(d.Tools), LossKind: cfg.Loss,
			SlotPositions: cfg.SlotPositions, Candidates: source, Vectors: cfg.Retriever}
	})
	if err != nil {
		return nil, err
	}
	// Tool2Vec vectors of the retriever run over the training part (no dev query).
	vecs, fallback, err := tool2vec(cfg.Retriever, bk, d, tr)
	if err != nil {
		return nil, err
	}
	mc.Dim = len(vecs[0])
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	if err := mc.SetVectors(store, vecs); err != nil {
		return nil, err
	}
	// The candidates are cached in the run directory before the run exists (run.json): a
	// failed start leaves at most the cache, which a retry reuses.
	if err := os.MkdirAll(cfg.RunDir, 0o755); err != nil {
		return nil, err
	}
	queries := append(tr.Judged(), dev.Judged()...)
	start := time.Now()
	lists, computed, err := cachedLists(ctx, cfg.RunDir, source, d, tr, bk, queries, cfg.Depth, cfg.Quiet)
	if err != nil {
		return nil, err
	}
	if computed {
		fmt.Fprintf(s.Log, "candidates: %s top %d of %d train+dev queries in %s\n", source, cfg.Depth, len(queries), time.Since(start).Round(time.Millisecond))
	}
	task := &Task{Cfg: mc, Data: d, Train: tr, Dev: dev, Tok: tok, Backend: bk, BatchSize: cfg.Batch, Seed: cfg.Seed,
		Lists: lists, Missing: cfg.Missing, Order: cfg.Order}
	if err := task.Prepare(); err != nil {
		return nil, err
	}
	if err := s.Create(); err != nil {
		return nil, err
	}
	if task.ExtraFiles, err = s.ModelFiles(ConfigFile, mc, tok); err != nil {
		return nil, err
	}
	tc, steps := s.TrainConfig(task, HeadVars...)
	fmt.Fprintf(s.Log, "%s\nrefiner: %s %d layers, hidden %d, vocab %d; N %d over %s; Tool2Vec vectors of %s (%d of %d tools have no training query and keep their text vector); %s loss, missing %s, order %s, slot positions %s; %d train queries, %d dev, %d steps -> %s\n",
		d.Stats(), mc.Encoder.ModelType(), mc.Encoder.Layers(), mc.Encoder.Hidden(), mc.Encoder.Vocab(), mc.N, source, cfg.Retriever,
		fallback, len(d.Tools), mc.LossKind, cfg.Missing, cfg.Order, mc.SlotPositions, len(tr.Judged()), len(dev.Judged()), steps, cfg.RunDir)
	sum, err := s.Run(store, task, tc)
	if err != nil {
		return nil, err
	}
	res := &Result{RunDir: cfg.RunDir, Summary: sum}
	if res.Weight, err = chooseWeight(ctx, s, cfg.FirstStageWeight, lists); err != nil {
		return nil, err
	}
	if cfg.Test == "" {
		return res, nil
	}
	if res.Test, err = evaluateTest(ctx, s, source, cfg.Depth); err != nil {
		return nil, err
	}
	return res, nil
}

// cachedLists returns the first stage's top depth of queries, cached in the run's
// CandidatesFile (computed reports whether any were computed), with a progress bar over the
// queries it computes unless quiet.
func cachedLists(ctx context.Context, runDir string, source candidates.Source, d *data.Dataset, tr *data.Split, bk compute.Backend, queries []int, depth int, quiet bool) (Lists, bool, error) {
	bar := progress.New("candidates: "+source.Kind+" queries", quiet, nil)
	defer bar.Finish()
	return candidates.Cached(ctx, filepath.Join(runDir, CandidatesFile), source, func() (rank.Ranker, error) {
		r, _, err := candidates.Open(source, d, tr, bk)
		return r, err
	}, d, queries, depth, bar.Update)
}

// chooseWeight records the first-stage weight of the run's best refiner (WeightFile): w as
// given, or (w = -1) the one of Weights that maximises the dev metric.
func chooseWeight(ctx context.Context, s *runs.Session, w float64, lists Lists) (Weight, error) {
	runDir, metric := s.H.RunDir, s.H.Metric
	rec := Weight{FirstStageWeight: w, Metric: metric}
	if w == -1 {
		m, err := LoadRun(runDir, s.Backend)
		if err != nil {
			return rec, err
		}
		m.Cfg.FirstStageWeight = 0
		best, vals, err := m.ChooseWeight(ctx, s.Data, s.Dev, lists, metric)
		if err != nil {
			return rec, err
		}
		rec.FirstStageWeight, rec.Weights, rec.Dev = best, Weights, vals
		var b strings.Builder
		for i, x := range Weights {
			fmt.Fprintf(&b, " %.1f:%.2f", x, vals[i])
		}
		fmt.Fprintf(s.Log, "first-stage weight on dev (%s by w):%s -> w = %.1f\n", metric, b.String(), best)
	}
	return rec, rundir.WriteJSON(runDir, WeightFile, rec)
}

// evaluateTest evaluates the first stage alone and with the run's best refiner on the test
// split (the same candidate lists), prints both and writes test_metrics.json.
func evaluateTest(ctx context.Context, s *runs.Session, source candidates.Source, depth int) (map[string]metrics.Report, error) {
	runDir, d := s.H.RunDir, s.Data
	ts, err := d.Split(s.H.Test)
	if err != nil {
		return nil, err
	}
	lists, _, err := cachedLists(ctx, runDir, source, d, s.Train, s.Backend, ts.Judged(), depth, s.H.Quiet)
	if err != nil {
		return nil, err
	}
	m, err := LoadRun(runDir, s.Backend)
	if err != nil {
		return nil, err
	}
	aloneCfg := *m.Cfg
	aloneCfg.FirstStageWeight = 0
	alone := &Model{Cfg: &aloneCfg, Tok: m.Tok, Backend: m.Backend, Store: m.Store, Batch: m.Batch}
	type row struct {
		name string
		r    rank.QueryRanker
	}
	rows := []row{{"first stage (" + source.Kind + ")", lists.Ranker()}, {"+ refiner", alone.Lists(lists)}}
	if w := m.Cfg.FirstStageWeight; w > 0 {
		rows = append(rows, row{fmt.Sprintf("+ refiner, first-stage weight %.1f", w), m.Lists(lists)})
	}
	out := map[string]metrics.Report{}
	for _, r := range rows {
		rep, err := metrics.EvaluateSplit(ctx, d, ts, r.r, metrics.DefaultKs)
		if err != nil {
			return nil, err
		}
		rep.Dataset = d.Name + " / " + r.name
		rep.Subsets, rep.ToolRecall = nil, nil
		fmt.Fprint(s.Out, rep)
		out[r.name] = rep
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return out, rundir.WriteFile(filepath.Join(runDir, "test_metrics.json"), append(b, '\n'))
}

// tool2vec returns the Tool2Vec vectors of a bi-encoder run's query tower over the training
// queries of train (tools without one keep their text vector; their count is returned).
func tool2vec(run string, bk compute.Backend, d *data.Dataset, train *data.Split) ([][]float32, int, error) {
	emb, err := biencoder.LoadRun(run, bk)
	if err != nil {
		return nil, 0, fmt.Errorf("-first-stage: %w", err)
	}
	r, err := emb.RetrieverFrom(d, "usage", train)
	if err != nil {
		return nil, 0, fmt.Errorf("-first-stage %s: %w", run, err)
	}
	return r.Tools, r.Fallbacks, nil
}

// sameSplit refuses a first-stage run whose recorded dev split differs from the retriever's:
// its dev queries would be training queries of the other.
func sameSplit(run, retriever string) error {
	a, err := rundir.Read(run)
	if err != nil {
		return fmt.Errorf("-candidates-run: %w", err)
	}
	b, err := rundir.Read(retriever)
	if err != nil {
		return fmt.Errorf("-first-stage: %w", err)
	}
	ia, ib := slices.Clone(a.Split.DevIDs), slices.Clone(b.Split.DevIDs)
	slices.Sort(ia)
	slices.Sort(ib)
	if !slices.Equal(ia, ib) {
		return fmt.Errorf("-candidates-run %s: its dev split (%d queries, dev %s seed %s) is not the -first-stage run's (%d queries): train it with -first-stage %s",
			run, len(ia), strconv.FormatFloat(a.Split.DevFraction, 'g', -1, 64), strconv.FormatInt(a.Split.Seed, 10), len(ib), retriever)
	}
	return nil
}
