package evalcmd

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/rundir"
)

// parseGridM parses "10:30,10:50" into (m_s, m_u) pairs with m_s < m_u.
func parseGridM(s string) ([][2]int, error) {
	var out [][2]int
	for _, f := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(f), ":")
		ms, err1 := strconv.Atoi(a)
		mu, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || ms <= 0 || mu <= ms {
			return nil, fmt.Errorf("-grid-m %q: want m_s:m_u pairs with 0 < m_s < m_u, separated by commas", s)
		}
		out = append(out, [2]int{ms, mu})
	}
	return out, nil
}

// parseWeight parses -weight: "dev" (tune w ∈ {0, 0.1, …, 1} on the retriever's dev split)
// or a fixed w in [0, 1].
func parseWeight(s string) (w float32, tune bool, err error) {
	if s == "dev" {
		return 0, true, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0 && f <= 1) {
		return 0, false, fmt.Errorf("-weight %q: want dev or a number in [0, 1]", s)
	}
	return float32(f), false, nil
}

// tuneOptions are the rerank grid search's settings: -grid-metric, -min-t, progress on stderr.
func tuneOptions(r *rerankOptions) (rerank.TuneOptions, error) {
	score, err := metrics.ParseMetric(r.gridMetric)
	return rerank.TuneOptions{Metric: r.gridMetric, Score: score, MinT: r.minT, Log: os.Stderr}, err
}

// buildRerank loads the runs, prepares the pipeline and, with -grid, tunes it on dev.
func buildRerank(o *options, d *data.Dataset) (rank.QueryRanker, string, error) {
	r := &o.rr
	plain := o.method == "rerank-m"
	env, err := setupRerank(o, d, plain)
	if err != nil {
		return nil, "", err
	}
	pl, mode := env.Pipeline, env.Pipeline.Mode
	desc := "ToolRerank"
	switch {
	case plain:
		desc = fmt.Sprintf("Rerank-%d", r.depth)
	case mode == rerank.ModeNone:
		desc += " without hierarchy"
	case mode == rerank.ModeSingle:
		desc += " (Alg. 1 only)"
	case mode == rerank.ModeMulti:
		desc += " (Alg. 2 only)"
	}
	if r.oracleType && mode == rerank.ModeAuto {
		desc += " with oracle query types"
	}
	// Without -grid, a weight to tune is the only grid dimension: the other parameters are
	// the flags' (Rerank-m's depth for both m).
	tuneW := pl.Norm != rerank.NormOff && len(env.Grid.W) > 1
	if (r.grid && !plain) || tuneW {
		g := env.Grid
		if !r.grid || plain {
			p := pl.Params
			g = rerank.Grid{M: [][2]int{{p.MS, p.MU}}, TauS: []float32{p.TauS}, TauM: []float32{p.TauM}, N: []int{p.N}, W: env.Grid.W}
		}
		qs, err := env.Prepare(env.Dev)
		if err != nil {
			return nil, "", err
		}
		t, err := tuneOptions(r)
		if err != nil {
			return nil, "", err
		}
		start := time.Now()
		best, val, err := rerank.Tune(context.Background(), pl, qs, g, t)
		if err != nil {
			return nil, "", err
		}
		pl.Params = best
		fmt.Fprintf(os.Stderr, "rerank: grid search (%d points) on %d dev queries in %v: best %s, dev %s %.2f\n",
			g.Size(), len(qs), time.Since(start).Round(time.Millisecond), pl.Setting(), r.gridMetric, 100*val)
		if r.grid && !plain {
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

// setupRerank checks the rerank flags and loads the runs they name (evaluate.NewRerank).
// plain is Rerank-m (no truncation by seen/unseen, no hierarchy step).
func setupRerank(o *options, d *data.Dataset, plain bool) (*evaluate.Rerank, error) {
	r := &o.rr
	if r.retriever == "" || (r.reranker == "" && r.scorer == nil) {
		return nil, fmt.Errorf("-method %s needs -first-stage RUN and -reranker RUN", o.method)
	}
	mode := rerank.ModeAuto
	switch {
	case plain || r.noHierarchy:
		mode = rerank.ModeNone
	case r.only != "":
		m, err := rerank.ParseMode(r.only)
		if err != nil || (m != rerank.ModeSingle && m != rerank.ModeMulti) {
			return nil, fmt.Errorf("-only %q: want single or multi", r.only)
		}
		mode = m
	}
	needType := mode == rerank.ModeAuto && !r.oracleType
	if needType && r.classifier == "" {
		return nil, fmt.Errorf("-method rerank needs -classifier RUN (a querytype classifier), or -oracle-type, -only or -no-hierarchy")
	}
	grid := rerank.DefaultGrid()
	var err error
	if grid.M, err = parseGridM(r.gridM); err != nil {
		return nil, err
	}
	norm, err := rerank.ParseNorm(r.interpolate)
	if err != nil {
		return nil, fmt.Errorf("-interpolate: %w", err)
	}
	w, tuneW, err := parseWeight(r.weight)
	if err != nil {
		return nil, err
	}
	if norm != rerank.NormOff {
		grid.W = []float32{w}
		if tuneW {
			grid.W = rerank.Weights(10)
		}
	}
	if ((r.grid || o.ablations) && !plain) || len(grid.W) > 1 {
		if _, err := metrics.ParseMetric(r.gridMetric); err != nil {
			return nil, fmt.Errorf("-grid-metric: %w", err)
		}
	}
	// The retriever's recorded split: the grid tunes on its dev part, and "seen" APIs are
	// those of its training part.
	trainPart, dev, meta, err := rundir.Splits(rundir.RunOf(r.retriever), d)
	if err != nil {
		return nil, fmt.Errorf("-first-stage: %w", err)
	}
	if r.reranker != "" {
		if err := rundir.CheckDev("-reranker", r.reranker, d, meta.Split); err != nil {
			return nil, err
		}
	}
	classifierRun := ""
	if needType {
		if err := rundir.CheckDev("-classifier", r.classifier, d, meta.Split); err != nil {
			return nil, err
		}
		classifierRun = r.classifier
	}
	evalSplit, err := d.Split(o.split)
	if err != nil {
		return nil, fmt.Errorf("-split: %w", err)
	}
	be, err := backend.Open(backend.Name(o.backend))
	if err != nil {
		return nil, err
	}
	params := r.params()
	params.W = w
	if plain {
		params.MS, params.MU = r.depth, r.depth
	}
	depth := max(params.MS, params.MU)
	if (r.grid || o.ablations) && !plain {
		for _, g := range grid.M {
			depth = max(depth, g[0], g[1])
		}
	}
	if o.ablations {
		for _, v := range evaluate.Variants {
			depth = max(depth, v.PlainM)
		}
	}
	return evaluate.NewRerank(d, evaluate.RerankOptions{
		Retriever: r.retriever, Reranker: r.reranker, Classifier: classifierRun, Scorer: r.scorer,
		Vectors: o.vectors, Backend: be, Train: trainPart, Dev: dev, Eval: evalSplit,
		Params: params, Mode: mode, Norm: norm, Grid: grid, Depth: depth, Log: os.Stderr,
	})
}
