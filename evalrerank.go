package toolret

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/rundir"
)

// ModelRerank is a cross-encoder reranking a Model's or an Index's ranking, after its
// recipe's hybrid fusion and clauses, in place of its recipe's reranker (EvalConfig.Reranker;
// eval -model DIR -reranker CE -depth K -weight W|dev): what a recipe's reranker
// (export.RerankerRecipe) does, with the cross-encoder, depth and weight given.
type ModelRerank struct {
	// CrossEncoder is an exported cross-encoder (export -format hf of a cross-encoder run, as
	// a recipe's reranker directory holds), a cross-encoder run or a hub id (export.Open).
	CrossEncoder string
	// Depth is how many of the first stage's top tools it rescores (0:
	// evaluate.DefaultRerankDepth).
	Depth int
	// Weight is the cross-encoder's weight w in [0, 1] of w·minmax(cross-encoder) +
	// (1−w)·minmax(first stage) over the top Depth; nil: the cross-encoder's order alone,
	// unless Dev.
	Weight *float64
	// Dev picks the weight among 0, 0.1, …, 1 on the dev split (the dataset's split named
	// dev, else the one SplitRun recorded) as eval -method rerank-m -weight dev does: Metric
	// ("": evaluate.DefaultRerankMetric) maximised, a weight above 0 kept only when its
	// per-query gain over the first stage's ranking has a paired t-statistic of at least MinT
	// (nil: evaluate.DefaultMinT).
	Dev    bool
	Metric string
	MinT   *float64
}

// check refuses a ModelRerank whose fields do not go together; errors name eval's flags.
func (m *ModelRerank) check() error {
	switch {
	case m.CrossEncoder == "":
		return errors.New("evaluate: Reranker: no CrossEncoder (-reranker)")
	case m.Depth < 0:
		return fmt.Errorf("evaluate: Reranker: -depth %d: want a positive number", m.Depth)
	case m.Weight != nil && !(*m.Weight >= 0 && *m.Weight <= 1):
		return fmt.Errorf("evaluate: Reranker: -weight %g: want dev or a weight in [0, 1]", *m.Weight)
	case m.Weight != nil && m.Dev:
		return errors.New("evaluate: Reranker: Weight and Dev: give a weight or pick it on dev")
	case !m.Dev && (m.Metric != "" || m.MinT != nil):
		return errors.New("evaluate: Reranker: Metric and MinT apply to Dev (-weight dev)")
	}
	if m.Dev {
		if _, err := m.tuneOptions(nil); err != nil {
			return err
		}
	}
	return nil
}

// tuneOptions are Dev's tuning options, as evaluate.RerankConfig's.
func (m *ModelRerank) tuneOptions(cfg *EvalConfig) (rerank.TuneOptions, error) {
	c := evaluate.RerankConfig{Metric: m.Metric, MinT: m.MinT}
	if cfg != nil {
		c.Log = cfg.Log
	}
	o, err := c.TuneOptions()
	if err != nil {
		return o, fmt.Errorf("evaluate: Reranker: %w", err)
	}
	return o, nil
}

// RerankStage is the cross-encoder stage of an Evaluation (Evaluation.Rerank): the reranker
// of a Model's or an Index's recipe, or EvalConfig.Reranker.
type RerankStage struct {
	// CrossEncoder is the cross-encoder's directory (or the reference given), Depth and
	// Weight as a recipe's reranker has them (export.RerankerRecipe; Weight as applied, the
	// one picked on dev with Tuned).
	CrossEncoder string
	Depth        int
	Weight       *float64
	// FromRecipe: the recipe of the Model (or the Index) gave it.
	FromRecipe bool
	// Tuned: Weight was picked on the DevQueries judged queries of the dev split DevSplit,
	// where it reaches DevScore of Metric (a fraction, as metrics.ParseMetric's).
	Tuned      bool
	DevSplit   string
	DevQueries int
	Metric     string
	DevScore   float64
}

// Recipe returns the stage as a recipe's reranker (export -recipe-reranker records it so).
func (st *RerankStage) Recipe() *export.RerankerRecipe {
	return &export.RerankerRecipe{Path: export.RerankerDir, Depth: st.Depth, Weight: st.Weight, Dir: st.CrossEncoder}
}

// String describes the stage as eval's method line shows it: "rerank 20 w0.4 on dev",
// "rerank 10 w0.3 (the model's recipe)".
func (st *RerankStage) String() string {
	s := st.Recipe().String()[1:] // "rerank 20 w0.4"
	if st.Tuned {
		s += " on dev"
	}
	if st.FromRecipe {
		s += " (the model's recipe)"
	}
	return s
}

// reranker returns the reranker cfg applies after a Model's or an Index's ranking, with Dir
// the cross-encoder to load: Reranker's (Weight nil with Dev: picked on dev), else the one of
// its recipe (the Model's toolret_recipe.json, or the reranker an Index records) unless
// NoRecipe; nil for none. fromRecipe says which.
func (cfg *EvalConfig) reranker(ctx context.Context) (rr *export.RerankerRecipe, fromRecipe bool, err error) {
	if m := cfg.Reranker; m != nil {
		return &export.RerankerRecipe{Path: export.RerankerDir, Depth: cmp.Or(m.Depth, evaluate.DefaultRerankDepth), Weight: m.Weight, Dir: m.CrossEncoder}, false, nil
	}
	if cfg.NoRecipe {
		return nil, false, nil
	}
	switch {
	case cfg.Model != "":
		r, err := ModelRecipe(ctx, cfg.Model)
		if err != nil || r == nil || r.Reranker == nil {
			return nil, false, err
		}
		return r.Reranker, true, nil
	case cfg.Index != "":
		man, err := export.ReadManifest(cfg.Index)
		if err != nil {
			return nil, false, fmt.Errorf("evaluate: Index (-index) %s: %w", cfg.Index, err)
		}
		if man.Reranker == nil {
			return nil, false, nil
		}
		c := *man.Reranker
		c.Dir = filepath.Join(cfg.Index, filepath.FromSlash(c.Path))
		return &c, true, nil
	}
	return nil, false, nil
}

// withReranker returns first (the ranking of a Model's or an Index's queries of split s of d,
// unrestricted to their libraries) reranked by rr as evaluate.StageRerank does, within each
// query's library, with the weight picked on the dev split when cfg.Reranker asks it.
func withReranker(ctx context.Context, cfg EvalConfig, d *data.Dataset, s *data.Split, first rank.QueryRanker, rr *export.RerankerRecipe, fromRecipe bool, be compute.Backend) (rank.QueryRanker, *RerankStage, error) {
	m, err := export.Open(ctx, rr.Dir, be)
	if err != nil {
		return nil, nil, fmt.Errorf("evaluate: reranker %s: %w", rr.Dir, err)
	}
	if m.Kind != export.KindCrossEncoder || m.Head == nil || len(m.Head.Labels) != 1 {
		return nil, nil, fmt.Errorf("evaluate: reranker %s is a %s, not a cross-encoder", rr.Dir, m.Kind)
	}
	tools := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		tools[i] = t.Text
	}
	// One cache: the dev queries' scores serve the evaluation of the same queries.
	sr := &evaluate.StageRerank{First: metrics.WithinLibraries(d, s, first), Score: evaluate.ExportedScorer{M: m, Tools: tools}.ScorePairs,
		Cache: &rerank.ScoreCache{}, Tools: len(d.Tools), Depth: rr.Depth, Weight: rr.Weight}
	st := &RerankStage{CrossEncoder: rr.Dir, Depth: rr.Depth, Weight: rr.Weight, FromRecipe: fromRecipe}
	if mr := cfg.Reranker; mr != nil && mr.Dev {
		dev := *sr
		if err := tuneReranker(ctx, cfg, d, first, &dev, st); err != nil {
			return nil, nil, err
		}
		sr.Weight = st.Weight
	}
	if len(d.Libraries) >= 2 { // First is within the libraries: so is its reranking
		return sr.InLibraries(), st, nil
	}
	return sr, st, nil
}

// tuneReranker picks st's weight with sr (its First set to first within the libraries of the
// dev split's queries) on the dev split of cfg and d: d's split named dev, else the one cfg's
// first run recorded.
func tuneReranker(ctx context.Context, cfg EvalConfig, d *data.Dataset, first rank.QueryRanker, sr *evaluate.StageRerank, st *RerankStage) error {
	o, err := cfg.Reranker.tuneOptions(&cfg)
	if err != nil {
		return err
	}
	dev, named := d.Splits["dev"]
	if !named {
		run := cfg.firstRun()
		if run == "" {
			return fmt.Errorf("evaluate: Reranker.Dev (-weight dev): %s has no split named dev: give SplitRun (eval -first-stage RUN), a trained run whose recorded dev split to tune on, or a weight", d.Name)
		}
		if _, dev, _, err = rundir.Splits(rundir.RunOf(run), d); err != nil {
			return fmt.Errorf("evaluate: Reranker.Dev (-weight dev): dev split of %s: %w", run, err)
		}
	}
	judged := dev.Judged()
	if len(judged) == 0 {
		return fmt.Errorf("evaluate: Reranker.Dev (-weight dev): dev split %s has no judged query", dev.Name)
	}
	qs := make([]rank.Query, len(judged))
	rel := make([][]int, len(judged))
	for i, q := range judged {
		qs[i], rel[i] = rank.Query{Index: q, Text: d.Queries[q].Text}, dev.Relevant[q]
	}
	start := time.Now()
	sr.First = metrics.WithinLibraries(d, dev, first)
	prepared, err := sr.Queries(ctx, qs, rel, metricDepth(o.Metric))
	if err != nil {
		return err
	}
	val, err := sr.Tune(ctx, prepared, DefaultFusionSteps, o)
	if err != nil {
		return err
	}
	st.Weight, st.Tuned = sr.Weight, true
	st.DevSplit, st.DevQueries, st.Metric, st.DevScore = dev.Name, len(judged), o.Metric, val
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "eval: rerank %d: weight %g on %d %s queries (%s %.2f) in %v\n", st.Depth, *st.Weight, len(judged), dev.Name, o.Metric, 100*val, time.Since(start).Round(time.Millisecond))
	}
	return nil
}
