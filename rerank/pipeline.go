package rerank

import (
	"context"
	"fmt"
	"math"
	"sync"
)

// Params are ToolRerank's hyper-parameters.
type Params struct {
	MS   int     `json:"m_s"`   // truncation depth for APIs seen in training
	MU   int     `json:"m_u"`   // truncation depth for unseen APIs
	TauS float32 `json:"tau_s"` // Alg. 1: tools of results scoring above it form X
	TauM float32 `json:"tau_m"` // Alg. 2: retriever cosine above it links two results
	N    int     `json:"n"`     // Alg. 2: results kept per connected component in F1
	// W is the cross-encoder's weight when the pipeline interpolates (Pipeline.Norm not
	// NormOff): score = W·norm(cross-encoder) + (1−W)·norm(first stage); W = 0 is the first
	// stage's ranking unchanged.
	W float32 `json:"w"`
}

func (p Params) String() string {
	return fmt.Sprintf("m_s=%d m_u=%d tau_s=%.2f tau_m=%.2f n=%d", p.MS, p.MU, p.TauS, p.TauM, p.N)
}

// DefaultParams are the values used without a grid search.
var DefaultParams = Params{MS: 10, MU: 30, TauS: 0.8, TauM: 0.8, N: 2, W: 0.5}

// Mode selects the hierarchy-aware stage of the pipeline.
type Mode int

// Modes.
const (
	ModeAuto   Mode = iota // Alg. 1 for single-tool queries, Alg. 2 for multi-tool ones
	ModeNone               // no hierarchy-aware stage: truncation + cross-encoder only
	ModeSingle             // Alg. 1 for every query
	ModeMulti              // Alg. 2 for every query
)

// ParseMode maps "" / "auto", "none", "single", "multi" to a Mode.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "auto":
		return ModeAuto, nil
	case "none":
		return ModeNone, nil
	case "single":
		return ModeSingle, nil
	case "multi":
		return ModeMulti, nil
	}
	return 0, fmt.Errorf("rerank mode %q: want auto, none, single or multi", s)
}

// Pipeline is ToolRerank's inference: adaptive truncation of the coarse list, cross-encoder
// reranking of what is kept, then the hierarchy-aware stage chosen by the query type.
//
// With Norm set, every score the pipeline ranks and thresholds by (the reranking, Alg. 1's
// tau_s and the re-reranking of its extended F1, Alg. 2's order) is the interpolation
// Params.W·norm(cross-encoder) + (1−Params.W)·norm(first stage), normalised over the APIs
// scored together (Interpolate); the first-stage scores come with each query (Query.First).
// Params.W = 0 gives the first stage's ranking unchanged: the cross-encoder has no say, and
// neither have the truncation and hierarchy steps that act on its judgement, so a weight
// tuned on dev over a grid holding 0 never ranks worse on dev than the first stage.
type Pipeline struct {
	Lib    *Library
	Scorer Scorer
	// Sim is the retriever's similarity of two APIs (cosine of their tool vectors), used by
	// Alg. 2; nil links results of the same tool only.
	Sim    func(a, b int) float32
	Params Params
	Mode   Mode
	// Norm is the interpolation's normalisation; NormOff (the zero value) ranks by the
	// cross-encoder's scores alone.
	Norm Norm
}

// Setting describes the parameters and the interpolation, for reports.
func (p *Pipeline) Setting() string {
	switch {
	case p.Norm == NormOff:
		return p.Params.String() + ", cross-encoder scores only"
	case p.Params.W == 0:
		return fmt.Sprintf("the first stage's ranking (interpolation %s w=0)", p.Norm)
	}
	return fmt.Sprintf("%s, interpolation %s w=%.2f", p.Params, p.Norm, p.Params.W)
}

// Run reranks one query. coarse is the retriever's ranking (APIs, best first, at least
// max(m_s, m_u) long when the library allows); multi is the query type (from the query-type
// classifier or an oracle). The result is the reranked list followed by the coarse APIs that
// truncation dropped, in coarse order (with their positions unchanged below the list, so
// metrics at any K compare with the retriever's). A pipeline that interpolates needs the
// first-stage scores: use RunQuery.
func (p *Pipeline) Run(ctx context.Context, query string, coarse []int, multi bool) ([]Candidate, error) {
	return p.RunQuery(ctx, Query{Text: query, Coarse: coarse, Multi: multi})
}

// RunQuery reranks one query as Run does, with its first-stage scores (q.First) when the
// pipeline interpolates.
func (p *Pipeline) RunQuery(ctx context.Context, q Query) ([]Candidate, error) {
	query, coarse, multi := q.Text, q.Coarse, q.Multi
	scorer := p.Scorer
	if p.Norm != NormOff {
		if len(q.First) == 0 && len(coarse) > 0 {
			return nil, fmt.Errorf("rerank: query %q: interpolation (%s) needs the first-stage scores", query, p.Norm)
		}
		if !(p.Params.W >= 0 && p.Params.W <= 1) {
			return nil, fmt.Errorf("rerank: interpolation weight %v: must be in [0, 1]", p.Params.W)
		}
		if p.Params.W == 0 { // the first stage alone
			out := make([]Candidate, len(coarse))
			for i, a := range coarse {
				if a < 0 || a >= len(q.First) {
					return nil, fmt.Errorf("rerank: query %q: no first-stage score for API %d (%d scores)", query, a, len(q.First))
				}
				out[i] = Candidate{API: a, Score: q.First[a]}
			}
			return out, nil
		}
		scorer = fused{Scorer: p.Scorer, first: q.First, w: p.Params.W, norm: p.Norm}
	}
	kept := Truncate(coarse, p.Lib.Seen, p.Params.MS, p.Params.MU)
	res, err := Rerank(ctx, scorer, query, kept)
	if err != nil {
		return nil, err
	}
	switch p.mode(multi) {
	case ModeSingle:
		res, err = SingleTool(ctx, scorer, p.Lib, query, res, p.Params.TauS)
	case ModeMulti:
		res = MultiTool(p.Lib, res, p.Sim, p.Params.TauM, p.Params.N)
	}
	if err != nil {
		return nil, err
	}
	return appendRest(res, coarse), nil
}

func (p *Pipeline) mode(multi bool) Mode {
	if p.Mode == ModeAuto {
		if multi {
			return ModeMulti
		}
		return ModeSingle
	}
	return p.Mode
}

// appendRest appends the coarse APIs missing from res, in coarse order, below every score.
func appendRest(res []Candidate, coarse []int) []Candidate {
	in := make(map[int]bool, len(res))
	for _, c := range res {
		in[c.API] = true
	}
	for _, a := range coarse {
		if !in[a] {
			in[a] = true
			res = append(res, Candidate{API: a, Score: float32(math.Inf(-1))})
		}
	}
	return res
}

// Needed returns every API the pipeline can send to the cross-encoder for a coarse ranking
// when truncation depths are at most m: the top m, plus all APIs of each tool in the top m
// that has an unseen API (Alg. 1 extends X with those). Precomputing these scores lets a grid
// search run without calling the cross-encoder again.
func Needed(lib *Library, coarse []int, m int) []int {
	top := coarse[:min(m, len(coarse))]
	out := append([]int(nil), top...)
	in := map[int]bool{}
	for _, a := range top {
		in[a] = true
	}
	done := map[int]bool{}
	for _, a := range top {
		g := lib.Group[a]
		if done[g] {
			continue
		}
		done[g] = true
		unseen := false
		for _, b := range lib.APIs[g] {
			unseen = unseen || !lib.Seen[b]
		}
		if !unseen {
			continue
		}
		for _, b := range lib.APIs[g] {
			if !in[b] {
				in[b] = true
				out = append(out, b)
			}
		}
	}
	return out
}

// ScoreCache memoises a Scorer per (query text, API): Put precomputed scores, and Score
// answers from the cache, asking the underlying Scorer (if any) only for missing pairs.
type ScoreCache struct {
	Scorer Scorer

	mu     sync.Mutex
	m      map[string]map[int]float32
	misses int
}

// Put stores a score.
func (c *ScoreCache) Put(query string, api int, score float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]map[int]float32{}
	}
	q := c.m[query]
	if q == nil {
		q = map[int]float32{}
		c.m[query] = q
	}
	q[api] = score
}

// Misses is the number of pairs scored by the underlying Scorer so far.
func (c *ScoreCache) Misses() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.misses
}

// Score implements Scorer.
func (c *ScoreCache) Score(ctx context.Context, query string, apis []int) ([]float32, error) {
	out := make([]float32, len(apis))
	var miss []int
	var missAt []int
	c.mu.Lock()
	q := c.m[query]
	for i, a := range apis {
		if s, ok := q[a]; ok {
			out[i] = s
		} else {
			miss, missAt = append(miss, a), append(missAt, i)
		}
	}
	c.mu.Unlock()
	if len(miss) == 0 {
		return out, nil
	}
	if c.Scorer == nil {
		return nil, fmt.Errorf("rerank: score cache has no score for %d APIs of query %q and no scorer", len(miss), query)
	}
	s, err := c.Scorer.Score(ctx, query, miss)
	if err != nil {
		return nil, err
	}
	if len(s) != len(miss) {
		return nil, fmt.Errorf("rerank: scorer returned %d scores for %d APIs", len(s), len(miss))
	}
	for j, a := range miss {
		out[missAt[j]] = s[j]
		c.Put(query, a, s[j])
	}
	c.mu.Lock()
	c.misses += len(miss)
	c.mu.Unlock()
	return out, nil
}

// Query is one evaluated query for RunAll and Search.
type Query struct {
	Text   string
	Coarse []int // retriever ranking, best first
	// First is the first stage's score of every API of the library, by API index (needed
	// when the pipeline interpolates: Alg. 1 can add APIs from outside Coarse).
	First    []float32
	Multi    bool  // query type used to pick the algorithm
	Relevant []int // ground truth (Search only)
}

// RunAll runs the pipeline over queries and returns the API rankings.
func (p *Pipeline) RunAll(ctx context.Context, qs []Query) ([][]int, error) {
	out := make([][]int, len(qs))
	for i, q := range qs {
		res, err := p.RunQuery(ctx, q)
		if err != nil {
			return nil, err
		}
		out[i] = make([]int, len(res))
		for j, c := range res {
			out[i][j] = c.API
		}
	}
	return out, nil
}

// Grid is a hyper-parameter search space.
type Grid struct {
	M    [][2]int // (m_s, m_u) pairs
	TauS []float32
	TauM []float32
	N    []int
	// W are the interpolation weights (used when the pipeline interpolates; empty: the base
	// pipeline's Params.W).
	W []float32
}

// DefaultGrid is the paper's: m_s < m_u from {10, 30, 50}, tau_s and tau_m in
// {0.6, 0.65, ..., 0.9}, n in {2, 3, 4}.
func DefaultGrid() Grid {
	var taus []float32
	for i := 0; i <= 6; i++ {
		taus = append(taus, float32(math.Round((0.6+0.05*float64(i))*100)/100))
	}
	return Grid{M: [][2]int{{10, 30}, {10, 50}, {30, 50}}, TauS: taus, TauM: taus, N: []int{2, 3, 4}}
}

// Size is the number of grid points (the full product; an empty W counts as one weight).
func (g Grid) Size() int { return len(g.M) * len(g.TauS) * len(g.TauM) * len(g.N) * max(len(g.W), 1) }

// Search finds the Params maximising the mean of score(ranking, relevant) over queries, for
// base's Lib, Scorer, Sim, Mode and Norm. Because the mean is over queries and each query uses
// either Alg. 1 (tau_s only) or Alg. 2 (tau_m, n only), the best tau_s and the best (tau_m,
// n) are found separately for each (w, m_s, m_u): the result is the optimum of the full
// product grid at a fraction of the cost. Ties go to the earlier grid point (weights in the
// order given: list 0 first to prefer the first stage's ranking). It returns the best Params
// and their mean score.
func Search(ctx context.Context, base Pipeline, qs []Query, g Grid, score func(ranked, relevant []int) float64) (Params, float64, error) {
	if len(g.M) == 0 {
		return Params{}, 0, fmt.Errorf("rerank: empty grid")
	}
	total := func(p Params, subset []Query) (float64, error) {
		pl := base
		pl.Params = p
		rk, err := pl.RunAll(ctx, subset)
		if err != nil {
			return 0, err
		}
		s := 0.0
		for i, q := range subset {
			s += score(rk[i], q.Relevant)
		}
		return s, nil
	}
	var single, multi []Query
	for _, q := range qs {
		if base.mode(q.Multi) == ModeMulti {
			multi = append(multi, q)
		} else {
			single = append(single, q)
		}
	}
	orDefault := func(v []float32, d float32) []float32 {
		if len(v) == 0 {
			return []float32{d}
		}
		return v
	}
	tauS, tauM := orDefault(g.TauS, DefaultParams.TauS), orDefault(g.TauM, DefaultParams.TauM)
	ns := g.N
	if len(ns) == 0 {
		ns = []int{DefaultParams.N}
	}
	if base.Mode == ModeNone || len(single) == 0 {
		tauS = tauS[:1]
	}
	if base.Mode == ModeNone || len(multi) == 0 {
		tauM, ns = tauM[:1], ns[:1]
	}
	ws := g.W
	if len(ws) == 0 || base.Norm == NormOff {
		ws = []float32{base.Params.W}
	}
	best, bestScore := Params{}, math.Inf(-1)
	for _, w := range ws {
		b, s, err := search(base, g.M, tauS, tauM, ns, w, single, multi, total)
		if err != nil {
			return Params{}, 0, err
		}
		if s > bestScore {
			best, bestScore = b, s
		}
	}
	if len(qs) > 0 {
		bestScore /= float64(len(qs))
	}
	return best, bestScore, nil
}

// search is Search for one interpolation weight w: the best Params and their summed score.
func search(base Pipeline, ms [][2]int, tauS, tauM []float32, ns []int, w float32, single, multi []Query,
	total func(p Params, subset []Query) (float64, error)) (Params, float64, error) {
	if base.Norm != NormOff && w == 0 { // the first stage's ranking: no parameter matters
		p := Params{MS: ms[0][0], MU: ms[0][1], TauS: tauS[0], TauM: tauM[0], N: ns[0]}
		s1, err := total(p, single)
		if err != nil {
			return Params{}, 0, err
		}
		s2, err := total(p, multi)
		return p, s1 + s2, err
	}
	best, bestScore := Params{}, math.Inf(-1)
	for _, m := range ms {
		p := Params{MS: m[0], MU: m[1], W: w}
		bs, bsScore := tauS[0], math.Inf(-1)
		for _, t := range tauS {
			p.TauS = t
			s, err := total(p, single)
			if err != nil {
				return Params{}, 0, err
			}
			if s > bsScore {
				bs, bsScore = t, s
			}
		}
		bm, bn, bmScore := tauM[0], ns[0], math.Inf(-1)
		for _, t := range tauM {
			for _, n := range ns {
				p.TauM, p.N = t, n
				s, err := total(p, multi)
				if err != nil {
					return Params{}, 0, err
				}
				if s > bmScore {
					bm, bn, bmScore = t, n, s
				}
			}
		}
		if s := bsScore + bmScore; s > bestScore {
			best, bestScore = Params{MS: m[0], MU: m[1], TauS: bs, TauM: bm, N: bn, W: w}, s
		}
	}
	return best, bestScore, nil
}

// CandidateAPIs returns the APIs of candidates, in order.
func CandidateAPIs(c []Candidate) []int {
	out := make([]int, len(c))
	for i, x := range c {
		out[i] = x.API
	}
	return out
}
