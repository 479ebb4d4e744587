package evalcmd

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/rundir"
)

// pairScorer is what the rerank pipeline needs of a cross-encoder: per-query scores and one
// batched pass over many (query, API) pairs.
type pairScorer interface {
	rerank.Scorer
	ScorePairs(ctx context.Context, queries []string, pairs []crossencoder.Pair) ([]float32, error)
}

// rerankRanker runs the ToolRerank pipeline over the queries of one split.
type rerankRanker struct {
	env    *rerankEnv
	split  *data.Split
	pl     rerank.Pipeline
	report string
}

// RankQueries implements retrieve.QueryRanker for judged queries of the ranker's split.
func (r *rerankRanker) RankQueries(ctx context.Context, qs []retrieve.Query, k int) ([]retrieve.Ranking, error) {
	prepared, err := r.env.prep(r.split)
	if err != nil {
		return nil, err
	}
	pos := make(map[int]int, len(prepared))
	for i, q := range r.split.Queries {
		pos[q] = i
	}
	sel := make([]rerank.Query, len(qs))
	for i, q := range qs {
		j, ok := pos[q.Index]
		if !ok {
			return nil, fmt.Errorf("rerank: query %d (%q) is not a query of split %s", q.Index, q.Text, r.split.Name)
		}
		sel[i] = prepared[j]
	}
	start := time.Now()
	rk, err := r.pl.RunAll(ctx, sel)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "rerank: %s, %s on %d %s queries in %v\n", r.report, r.pl.Setting(), len(sel), r.split.Name, time.Since(start).Round(time.Millisecond))
	out := make([]retrieve.Ranking, len(rk))
	for i, tools := range rk {
		if k > 0 && len(tools) > k {
			tools = tools[:k]
		}
		out[i] = retrieve.Ranking{Tools: tools, Scores: make([]float32, len(tools))}
		for j := range tools {
			out[i].Scores[j] = float32(len(tools) - j)
		}
	}
	return out, nil
}

// metricFn returns the per-query value of a metric name such as "ndcg@5".
func metricFn(name string) (func(ranked, rel []int) float64, error) {
	kind, ks, ok := strings.Cut(name, "@")
	k, err := strconv.Atoi(ks)
	if !ok || err != nil || k <= 0 {
		return nil, fmt.Errorf("metric %q: want recall@K, ndcg@K or comp@K", name)
	}
	switch kind {
	case "recall", "ndcg", "comp":
	default:
		return nil, fmt.Errorf("metric %q: want recall@K, ndcg@K or comp@K", name)
	}
	return func(ranked, rel []int) float64 {
		r, n, c := metrics.Query(ranked, rel, k)
		switch kind {
		case "recall":
			return r
		case "ndcg":
			return n
		}
		return c
	}, nil
}

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

// cosineMatrix returns the cosine similarity of every pair of vectors.
func cosineMatrix(v [][]float32) [][]float32 {
	norm := make([]float64, len(v))
	for i, x := range v {
		s := 0.0
		for _, f := range x {
			s += float64(f) * float64(f)
		}
		norm[i] = math.Sqrt(s)
	}
	out := make([][]float32, len(v))
	for i := range v {
		out[i] = make([]float32, len(v))
	}
	for i := range v {
		out[i][i] = 1
		for j := i + 1; j < len(v); j++ {
			s := float32(0)
			for k := range v[i] {
				s += v[i][k] * v[j][k]
			}
			c := float32(0)
			if norm[i] > 0 && norm[j] > 0 {
				c = float32(float64(s) / (norm[i] * norm[j]))
			}
			out[i][j], out[j][i] = c, c
		}
	}
	return out
}

// checkDev reports an error unless the run at path (given as -name) was trained on d and held
// out every dev query of the retriever's split, so that tuning on that split never sees one
// of its training queries.
func checkDev(name, path string, d *data.Dataset, dev rundir.Split) error {
	m, err := rundir.Read(rundir.RunOf(path))
	if err != nil {
		return fmt.Errorf("-%s: %w", name, err)
	}
	if err := m.CheckData(d); err != nil {
		return fmt.Errorf("-%s %s: %w", name, path, err)
	}
	held := make(map[string]bool, len(m.Split.DevIDs))
	for _, id := range m.Split.DevIDs {
		held[id] = true
	}
	trained := 0
	for _, id := range dev.DevIDs {
		if !held[id] {
			trained++
		}
	}
	if m.Split.From != dev.From || trained > 0 {
		return fmt.Errorf("-%s %s: %d of the -retriever run's %d dev queries are training queries of this run (its dev split: %q fraction %v seed %d; the retriever's: %q fraction %v seed %d); train it with -retriever so that it takes the retriever's dev split",
			name, path, trained, len(dev.DevIDs), m.Split.From, m.Split.DevFraction, m.Split.Seed, dev.From, dev.DevFraction, dev.Seed)
	}
	return nil
}

// rerankEnv is what every ToolRerank variant shares: the loaded models, the pipeline with
// the options' parameters, mode and interpolation, the splits (dev: the -retriever run's
// recorded dev split; eval: -split), and prep, which ranks, types and scores the queries of a
// split once (memoised by split name) and returns them in s.Queries order. grid.W holds the
// interpolation weights to tune on dev (-weight dev), or the one -weight gives.
type rerankEnv struct {
	d         *data.Dataset
	ret       *biencoder.Retriever
	pl        rerank.Pipeline
	grid      rerank.Grid
	dev, eval *data.Split
	prep      func(s *data.Split) ([]rerank.Query, error)
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

// tuneOnDev searches g on the dev queries qs for pl and reports the best dev metric of each
// interpolation weight (one line), and the retriever's own (w = 0), on stderr. With one
// weight, or no interpolation, it is rerank.Search.
//
// A dev optimum of 198 queries moves by noise: a weight above 0 is kept only when its
// per-query gain over the retriever's ranking (w = 0, in the grid) has a paired t-statistic
// of at least minT (0: always kept); otherwise the result is w = 0, the retriever's ranking.
func tuneOnDev(pl rerank.Pipeline, qs []rerank.Query, g rerank.Grid, metric string, minT float64) (rerank.Params, float64, error) {
	score, err := metricFn(metric)
	if err != nil {
		return rerank.Params{}, 0, err
	}
	ctx := context.Background()
	if pl.Norm == rerank.NormOff || len(g.W) <= 1 {
		return rerank.Search(ctx, pl, qs, g, score)
	}
	best, bestVal := rerank.Params{}, math.Inf(-1)
	var curve []string
	for _, w := range g.W { // in order: ties go to the smaller weight
		gw := g
		gw.W = []float32{w}
		p, v, err := rerank.Search(ctx, pl, qs, gw, score)
		if err != nil {
			return rerank.Params{}, 0, err
		}
		curve = append(curve, fmt.Sprintf("%g:%.2f", w, 100*v))
		if v > bestVal {
			best, bestVal = p, v
		}
	}
	fmt.Fprintf(os.Stderr, "rerank: interpolation %s: dev %s by weight (0 = the retriever alone) %s: w=%g\n", pl.Norm, metric, strings.Join(curve, " "), best.W)
	if minT <= 0 || best.W == 0 || !slices.Contains(g.W, 0) {
		return best, bestVal, nil
	}
	tuned, first := pl, pl
	tuned.Params, first.Params = best, best
	first.Params.W = 0
	a, err := rerank.PerQuery(ctx, tuned, qs, score)
	if err != nil {
		return rerank.Params{}, 0, err
	}
	b, err := rerank.PerQuery(ctx, first, qs, score)
	if err != nil {
		return rerank.Params{}, 0, err
	}
	t := rerank.PairedT(a, b)
	if t >= minT {
		fmt.Fprintf(os.Stderr, "rerank: w=%g beats the retriever on dev with paired t %.2f >= -min-t %g\n", best.W, t, minT)
		return best, bestVal, nil
	}
	retr := 0.0
	for _, v := range b {
		retr += v / float64(len(b))
	}
	fmt.Fprintf(os.Stderr, "rerank: w=%g gains %+.2f dev %s over the retriever with paired t %.2f < -min-t %g: w=0, the retriever's ranking\n",
		best.W, 100*(bestVal-retr), metric, t, minT)
	return first.Params, retr, nil
}

// buildRerank loads the runs, prepares the pipeline and, with -grid, tunes it on dev.
func buildRerank(o *options, d *data.Dataset) (retrieve.QueryRanker, string, error) {
	r := &o.rr
	plain := o.method == "rerank-m"
	env, err := setupRerank(o, d, plain)
	if err != nil {
		return nil, "", err
	}
	pl, mode := env.pl, env.pl.Mode
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
	tuneW := pl.Norm != rerank.NormOff && len(env.grid.W) > 1
	if (r.grid && !plain) || tuneW {
		g := env.grid
		if !r.grid || plain {
			p := pl.Params
			g = rerank.Grid{M: [][2]int{{p.MS, p.MU}}, TauS: []float32{p.TauS}, TauM: []float32{p.TauM}, N: []int{p.N}, W: env.grid.W}
		}
		qs, err := env.prep(env.dev)
		if err != nil {
			return nil, "", err
		}
		start := time.Now()
		best, val, err := tuneOnDev(pl, qs, g, r.gridMetric, r.minT)
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
	return &rerankRanker{env: env, split: env.eval, pl: pl, report: desc}, desc, nil
}

// setupRerank loads the runs the options name and builds the shared environment. plain is
// Rerank-m (no truncation by seen/unseen, no hierarchy step).
func setupRerank(o *options, d *data.Dataset, plain bool) (*rerankEnv, error) {
	r := &o.rr
	if r.retriever == "" || (r.reranker == "" && r.scorer == nil) {
		return nil, fmt.Errorf("-method %s needs -retriever RUN and -reranker RUN", o.method)
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
		if _, err := metricFn(r.gridMetric); err != nil {
			return nil, fmt.Errorf("-grid-metric: %w", err)
		}
	}
	// The retriever's recorded split: the grid tunes on its dev part, and "seen" APIs are
	// those of its training part.
	trainPart, dev, meta, err := rundir.Splits(rundir.RunOf(r.retriever), d)
	if err != nil {
		return nil, fmt.Errorf("-retriever: %w", err)
	}
	if r.reranker != "" {
		if err := checkDev("reranker", r.reranker, d, meta.Split); err != nil {
			return nil, err
		}
	}
	if needType {
		if err := checkDev("classifier", r.classifier, d, meta.Split); err != nil {
			return nil, err
		}
	}
	evalSplit, err := d.Split(o.split)
	if err != nil {
		return nil, fmt.Errorf("-split: %w", err)
	}
	be, err := backend.Open(backend.Name(o.backend))
	if err != nil {
		return nil, err
	}
	emb, err := biencoder.LoadRun(r.retriever, be)
	if err != nil {
		return nil, err
	}
	ret, err := emb.RetrieverFrom(d, o.vectors, trainPart)
	if err != nil {
		return nil, err
	}
	ce := r.scorer
	if ce == nil {
		toolTexts := make([]string, len(d.Tools))
		for i, t := range d.Tools {
			toolTexts[i] = t.Text
		}
		m, err := crossencoder.LoadRun(r.reranker, be, toolTexts)
		if err != nil {
			return nil, err
		}
		ce = m
	}
	var typer *classifier.Model
	if needType {
		if typer, err = classifier.LoadRun(r.classifier, be); err != nil {
			return nil, err
		}
		if typer.Cfg.Kind != classifier.KindQueryType {
			return nil, fmt.Errorf("-classifier %s is a %s model, want querytype", r.classifier, typer.Cfg.Kind)
		}
	}
	// Seen = used by the training queries the models were trained on (train minus dev).
	seen := make([]bool, len(d.Tools))
	for _, rel := range trainPart.Relevant {
		for _, t := range rel {
			seen[t] = true
		}
	}
	_, group := d.Groups()
	lib, err := rerank.NewLibrary(group, seen)
	if err != nil {
		return nil, err
	}
	sim := cosineMatrix(ret.Tools)
	cache := &rerank.ScoreCache{Scorer: ce}
	params := r.params()
	params.W = w
	if plain {
		params.MS, params.MU = r.depth, r.depth
	}
	pl := rerank.Pipeline{Lib: lib, Scorer: cache, Sim: func(a, b int) float32 { return sim[a][b] }, Params: params, Mode: mode, Norm: norm}
	depth := max(params.MS, params.MU)
	if (r.grid || o.ablations) && !plain {
		for _, g := range grid.M {
			depth = max(depth, g[0], g[1])
		}
	}
	if o.ablations {
		for _, v := range rerankVariants {
			depth = max(depth, v.plainM)
		}
	}
	// prep ranks a split's queries with the retriever, types them and fills the score
	// cache with every pair the pipeline (or the grid) can ask for, in one batched pass. The
	// retriever scores every API (the interpolation's first-stage scores: Alg. 1 can add APIs
	// from beyond the coarse list); the coarse list is its top max(depth, 50).
	prep := func(s *data.Split) ([]rerank.Query, error) {
		ctx := context.Background()
		qs := s.Queries
		texts := make([]string, len(qs))
		for i, q := range qs {
			texts[i] = d.Queries[q].Text
		}
		start := time.Now()
		coarse, err := ret.RankTexts(texts, len(d.Tools))
		if err != nil {
			return nil, err
		}
		out := make([]rerank.Query, len(qs))
		var pairs []crossencoder.Pair
		for i, q := range qs {
			first := make([]float32, len(d.Tools))
			for j, a := range coarse[i].Tools {
				first[a] = coarse[i].Scores[j]
			}
			coarse[i].Tools = coarse[i].Tools[:min(max(depth, 50), len(coarse[i].Tools))]
			out[i] = rerank.Query{Text: texts[i], Coarse: coarse[i].Tools, First: first, Relevant: s.Relevant[q]}
			need := coarse[i].Tools[:min(depth, len(coarse[i].Tools))]
			if mode == rerank.ModeAuto || mode == rerank.ModeSingle { // Alg. 1 may add unseen tools' APIs
				need = rerank.Needed(lib, coarse[i].Tools, depth)
			}
			for _, a := range need {
				pairs = append(pairs, crossencoder.Pair{Query: i, Tool: a})
			}
		}
		scores, err := ce.ScorePairs(ctx, texts, pairs)
		if err != nil {
			return nil, err
		}
		if len(scores) != len(pairs) {
			return nil, fmt.Errorf("rerank: %d cross-encoder scores for %d pairs", len(scores), len(pairs))
		}
		for j, p := range pairs {
			cache.Put(texts[p.Query], p.Tool, scores[j])
		}
		fmt.Fprintf(os.Stderr, "rerank: %s: retriever top-%d and %d cross-encoder scores for %d queries in %v\n",
			s.Name, max(depth, 50), len(pairs), len(qs), time.Since(start).Round(time.Millisecond))
		types := classifier.QueryTypes(d, s)
		if typer != nil {
			p, err := typer.PMulti(texts)
			if err != nil {
				return nil, err
			}
			for i := range out {
				out[i].Multi = p[i] > 0.5
			}
			acc := classifier.TypeAccuracy(p, qs, types)
			fmt.Fprintf(os.Stderr, "rerank: %s: query-type classifier accuracy %.2f (single-tool %.2f of %.0f, multi-tool %.2f of %.0f)\n",
				s.Name, acc["accuracy"], acc["acc_single"], acc["n_single"], acc["acc_multi"], acc["n_multi"])
		} else {
			for i, q := range qs {
				out[i].Multi = types[q]
			}
		}
		return out, nil
	}
	memo := map[string][]rerank.Query{}
	env := &rerankEnv{d: d, ret: ret, pl: pl, grid: grid, dev: dev, eval: evalSplit}
	env.prep = func(s *data.Split) ([]rerank.Query, error) {
		if qs, ok := memo[s.Name]; ok {
			return qs, nil
		}
		qs, err := prep(s)
		if err == nil {
			memo[s.Name] = qs
		}
		return qs, err
	}
	return env, nil
}
