package evaluate

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/rundir"
)

// DefaultRerankMetric is the dev metric RerankConfig's tuning maximises by default (eval
// -grid-metric).
const DefaultRerankMetric = "ndcg@5"

// DefaultRerankDepth is eval -depth's default: how many of the first stage's top tools
// rerank-m's cross-encoder reranks (RerankConfig.Depth).
const DefaultRerankDepth = 30

// DefaultMinT is the paired t-statistic over the first stage's ranking a dev-tuned weight
// above 0 must reach by default (eval -min-t; rerank.TuneOptions.MinT).
const DefaultMinT = 2.0

// RerankConfig is a cross-encoder reranking of a bi-encoder's first stage, as eval -method
// rerank (ToolRerank: truncation by seen and unseen APIs, the query-type hierarchy of Alg. 1
// and Alg. 2) and eval -method rerank-m (Rerank-m: the cross-encoder reranks the first
// stage's top Depth) run it; its zero values are eval's defaults. The runs must share the
// first stage's recorded dev split (run.json): tuning never sees a query any stage trained
// on. Its errors name eval's flags, as the command prints them.
type RerankConfig struct {
	// FirstStage is the bi-encoder run ranking the first stage (eval -first-stage); its
	// recorded split gives the dev split tuning searches and the seen APIs (those of its
	// training part's queries).
	FirstStage string
	// Reranker is the cross-encoder run (eval -reranker), trained on FirstStage's split.
	// Scorer, when set, scores the pairs instead (a cross-encoder with known scores).
	Reranker string
	Scorer   PairScorer
	// Classifier is the query-type classifier run (eval -classifier) ToolRerank sends each
	// query to Alg. 1 or Alg. 2 with; needed with Mode rerank.ModeAuto unless OracleType.
	Classifier string
	// Depth > 0 is Rerank-m (eval -method rerank-m -depth): the cross-encoder reranks the
	// first stage's top Depth, without truncation by seen and unseen APIs or hierarchy. 0 is
	// ToolRerank (eval -method rerank).
	Depth int
	// Params are ToolRerank's m_s, m_u, tau_s, tau_m and n (eval -m-seen, -m-unseen, -tau-s,
	// -tau-m, -per-component; the zero value: rerank.DefaultParams). Params.W is not read:
	// the weight is Weight.
	Params rerank.Params
	// Mode is ToolRerank's hierarchy: rerank.ModeAuto (the zero value: Alg. 1 for the queries
	// the classifier calls single-tool, Alg. 2 for the others), rerank.ModeNone (eval
	// -no-hierarchy: truncation and the cross-encoder only), rerank.ModeSingle or
	// rerank.ModeMulti (eval -only single|multi: one algorithm for every query).
	Mode rerank.Mode
	// OracleType takes the query types from the qrels instead of the Classifier (eval
	// -oracle-type).
	OracleType bool
	// Grid grid-searches ToolRerank's parameters on the dev split before evaluating with the
	// best (eval -grid): (m_s, m_u) in GridM (nil: rerank.DefaultGrid's), tau_s and tau_m in
	// {0.6..0.9}, n in {2,3,4}, with the weights Weight gives. Rerank-m ignores it.
	Grid  bool
	GridM [][2]int
	// Metric is the dev metric tuning maximises: recall@K, ndcg@K or comp@K (eval
	// -grid-metric; "": DefaultRerankMetric).
	Metric string
	// MinT is the paired t-statistic of the per-query dev gain over the first stage's
	// ranking a dev-tuned weight above 0 must reach to be kept, else w = 0 (eval -min-t; nil:
	// DefaultMinT; 0: keep the dev optimum).
	MinT *float64
	// Interpolate is how the cross-encoder's scores are interpolated with the first stage's,
	// both normalised per query over the reranked APIs: score = w·norm(cross-encoder) +
	// (1-w)·norm(first stage), norm "minmax" (the default, "") or "zscore"; "off" ranks by the
	// cross-encoder alone (eval -interpolate).
	Interpolate string
	// Weight is the interpolation's cross-encoder weight w in [0, 1] (0: the first stage's
	// ranking; eval -weight W); nil tunes it on the dev split among 0, 0.1, ..., 1 (eval
	// -weight dev; with Grid, with the other parameters).
	Weight *float64
	// Vectors are the first stage's tool vectors: "text" (its tool tower; "": text) or
	// "usage" (Tool2Vec, from the queries of its recorded training part; eval -tool-vectors).
	Vectors string
	// Backend runs the models (nil: backend.Open's default).
	Backend compute.Backend
	// Ablations prepares the cross-encoder scores Rerank.Ablations' variants need (eval
	// -ablations): Setup scores as deep as the deepest of them.
	Ablations bool
	// Log receives progress lines: scoring, the grid search and its best point (nil: none).
	Log io.Writer
}

// method is eval's -method of the configuration.
func (c *RerankConfig) method() string {
	if c.Depth > 0 {
		return "rerank-m"
	}
	return "rerank"
}

// TuneOptions are the options tuning on dev takes: Metric, MinT and Log.
func (c *RerankConfig) TuneOptions() (rerank.TuneOptions, error) {
	m := c.Metric
	if m == "" {
		m = DefaultRerankMetric
	}
	score, err := metrics.ParseMetric(m)
	if err != nil {
		return rerank.TuneOptions{}, fmt.Errorf("-grid-metric: %w", err)
	}
	minT := DefaultMinT
	if c.MinT != nil {
		minT = *c.MinT
	}
	if !(minT >= 0) {
		return rerank.TuneOptions{}, fmt.Errorf("-min-t %v: want a value >= 0", minT)
	}
	return rerank.TuneOptions{Metric: m, Score: score, MinT: minT, Log: c.Log}, nil
}

// Setup checks c, loads the runs it names and builds the pipeline over d's tools with c's
// parameters, mode and interpolation, evaluating the queries of eval; its Grid is what tuning
// searches.
func (c RerankConfig) Setup(d *data.Dataset, eval *data.Split) (*Rerank, error) {
	plain := c.Depth > 0
	if c.FirstStage == "" || (c.Reranker == "" && c.Scorer == nil) {
		return nil, fmt.Errorf("-method %s needs -first-stage RUN and -reranker RUN", c.method())
	}
	if c.Depth < 0 {
		return nil, fmt.Errorf("-depth %d: want a positive number", c.Depth)
	}
	mode := c.Mode
	switch {
	case plain:
		mode = rerank.ModeNone
	case mode != rerank.ModeAuto && mode != rerank.ModeNone && mode != rerank.ModeSingle && mode != rerank.ModeMulti:
		return nil, fmt.Errorf("rerank mode %d: want auto, none (-no-hierarchy), single or multi (-only)", mode)
	}
	needType := mode == rerank.ModeAuto && !c.OracleType
	if needType && c.Classifier == "" {
		return nil, fmt.Errorf("-method rerank needs -classifier RUN (a querytype classifier), or -oracle-type, -only or -no-hierarchy")
	}
	grid := rerank.DefaultGrid()
	if c.GridM != nil {
		for _, m := range c.GridM {
			if m[0] <= 0 || m[1] <= m[0] {
				return nil, fmt.Errorf("-grid-m %v: want m_s:m_u pairs with 0 < m_s < m_u", c.GridM)
			}
		}
		grid.M = c.GridM
	}
	interp := c.Interpolate
	if interp == "" {
		interp = string(rerank.NormMinMax)
	}
	norm, err := rerank.ParseNorm(interp)
	if err != nil {
		return nil, fmt.Errorf("-interpolate: %w", err)
	}
	var w float32
	if c.Weight != nil {
		if !(*c.Weight >= 0 && *c.Weight <= 1) {
			return nil, fmt.Errorf("-weight %v: want dev or a number in [0, 1]", *c.Weight)
		}
		w = float32(*c.Weight)
	}
	if norm != rerank.NormOff {
		grid.W = []float32{w}
		if c.Weight == nil {
			grid.W = rerank.Weights(10)
		}
	}
	if ((c.Grid || c.Ablations) && !plain) || len(grid.W) > 1 {
		if _, err := c.TuneOptions(); err != nil {
			return nil, err
		}
	}
	params := c.Params
	if params == (rerank.Params{}) {
		params = rerank.DefaultParams
	}
	if params.MS <= 0 || params.MU <= 0 || params.N <= 0 {
		return nil, fmt.Errorf("-m-seen %d, -m-unseen %d, -per-component %d: want positive numbers", params.MS, params.MU, params.N)
	}
	params.W = w
	if plain {
		params.MS, params.MU = c.Depth, c.Depth
	}
	// The first stage's recorded split: the grid tunes on its dev part, and "seen" APIs are
	// those of its training part.
	trainPart, dev, meta, err := rundir.Splits(rundir.RunOf(c.FirstStage), d)
	if err != nil {
		return nil, fmt.Errorf("-first-stage: %w", err)
	}
	if c.Reranker != "" {
		if err := rundir.CheckDev("-reranker", c.Reranker, d, meta.Split); err != nil {
			return nil, err
		}
	}
	classifierRun := ""
	if needType {
		if err := rundir.CheckDev("-classifier", c.Classifier, d, meta.Split); err != nil {
			return nil, err
		}
		classifierRun = c.Classifier
	}
	if eval == nil {
		return nil, fmt.Errorf("rerank: no split to evaluate")
	}
	be := c.Backend
	if be == nil {
		if be, err = backend.Open(""); err != nil {
			return nil, err
		}
	}
	vectors := c.Vectors
	if vectors == "" {
		vectors = "text"
	}
	depth := max(params.MS, params.MU)
	if (c.Grid || c.Ablations) && !plain {
		for _, g := range grid.M {
			depth = max(depth, g[0], g[1])
		}
	}
	if c.Ablations {
		for _, v := range Variants {
			depth = max(depth, v.PlainM)
		}
	}
	return NewRerank(d, RerankOptions{
		Retriever: c.FirstStage, Reranker: c.Reranker, Classifier: classifierRun, Scorer: c.Scorer,
		Vectors: vectors, Backend: be, Train: trainPart, Dev: dev, Eval: eval,
		Params: params, Mode: mode, Norm: norm, Grid: grid, Depth: depth, Log: c.Log,
	})
}

// Ranker sets up the reranking (Setup), tunes what c leaves to the dev split (the weight
// when Weight is nil, every parameter with Grid) and returns the ranker of eval's judged
// queries, with its description as eval prints it ("Rerank-30 + minmax interpolation with the
// retriever (w=0.3 on dev)").
func (c RerankConfig) Ranker(ctx context.Context, d *data.Dataset, eval *data.Split) (rank.QueryRanker, string, error) {
	env, err := c.Setup(d, eval)
	if err != nil {
		return nil, "", err
	}
	plain := c.Depth > 0
	pl, mode := env.Pipeline, env.Pipeline.Mode
	desc := "ToolRerank"
	switch {
	case plain:
		desc = fmt.Sprintf("Rerank-%d", c.Depth)
	case mode == rerank.ModeNone:
		desc += " without hierarchy"
	case mode == rerank.ModeSingle:
		desc += " (Alg. 1 only)"
	case mode == rerank.ModeMulti:
		desc += " (Alg. 2 only)"
	}
	if c.OracleType && mode == rerank.ModeAuto {
		desc += " with oracle query types"
	}
	// Without Grid, a weight to tune is the only grid dimension: the other parameters are
	// c's (Rerank-m's depth for both m).
	tuneW := pl.Norm != rerank.NormOff && len(env.Grid.W) > 1
	if (c.Grid && !plain) || tuneW {
		g := env.Grid
		if !c.Grid || plain {
			p := pl.Params
			g = rerank.Grid{M: [][2]int{{p.MS, p.MU}}, TauS: []float32{p.TauS}, TauM: []float32{p.TauM}, N: []int{p.N}, W: env.Grid.W}
		}
		qs, err := env.Prepare(env.Dev)
		if err != nil {
			return nil, "", err
		}
		t, err := c.TuneOptions()
		if err != nil {
			return nil, "", err
		}
		start := time.Now()
		best, val, err := rerank.Tune(ctx, pl, qs, g, t)
		if err != nil {
			return nil, "", err
		}
		pl.Params = best
		if c.Log != nil {
			fmt.Fprintf(c.Log, "rerank: grid search (%d points) on %d dev queries in %v: best %s, dev %s %.2f\n",
				g.Size(), len(qs), time.Since(start).Round(time.Millisecond), pl.Setting(), t.Metric, 100*val)
		}
		if c.Grid && !plain {
			desc += " (grid-searched on dev)"
		}
	}
	if pl.Norm != rerank.NormOff {
		w := fmt.Sprintf("w=%g", pl.Params.W)
		if tuneW {
			w += " on dev"
		}
		desc += fmt.Sprintf(" + %s interpolation with the retriever (%s)", pl.Norm, w)
	}
	return env.Ranker(pl, desc), desc, nil
}
