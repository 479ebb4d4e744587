package evaluate

import (
	"context"
	"fmt"
	"strconv"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// ExportedScorer scores with a cross-encoder loaded as an export.Model (an hf export of a
// cross-encoder run, or the run itself: export.Open) over the tool texts of a dataset, in its
// order: the sigmoid of the model's logit for (query, tool text), as toolindex.WithReranker
// scores a tool.
type ExportedScorer struct {
	M     *export.Model
	Tools []string
}

// ScorePairs scores each (queries[p.Query], tool p.Tool) of pairs, batched across queries: a
// rank.PairScorer.
func (s ExportedScorer) ScorePairs(ctx context.Context, queries []string, pairs []rank.Pair) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(pairs) == 0 {
		return nil, nil
	}
	qs, docs := make([]string, len(pairs)), make([]string, len(pairs))
	for i, p := range pairs {
		if p.Tool < 0 || p.Tool >= len(s.Tools) || p.Query < 0 || p.Query >= len(queries) {
			return nil, fmt.Errorf("rerank: pair (query %d, tool %d) out of range (%d queries, %d tools)", p.Query, p.Tool, len(queries), len(s.Tools))
		}
		qs[i], docs[i] = queries[p.Query], s.Tools[p.Tool]
	}
	logits, err := s.M.Score(qs, docs)
	if err != nil {
		return nil, fmt.Errorf("rerank: %s: %w", s.M.Source, err)
	}
	out := make([]float32, len(pairs))
	for i := range out {
		out[i] = export.Sigmoid(logits[i][0])
	}
	return out, nil
}

// Score implements rerank.Scorer: the scores of query with each of apis.
func (s ExportedScorer) Score(ctx context.Context, query string, apis []int) ([]float32, error) {
	pairs := make([]rank.Pair, len(apis))
	for i, a := range apis {
		pairs[i] = rank.Pair{Tool: a}
	}
	return s.ScorePairs(ctx, []string{query}, pairs)
}

// StageRerank is Rerank-m over any first stage: the cross-encoder Score rescores the top
// Depth tools of First's ranking of each query, and with Weight ranks them by
// w·minmax(cross-encoder) + (1−w)·minmax(first stage) over those Depth (rerank.Interpolate;
// nil: by the cross-encoder's score alone); the rest of First's ranking follows in its order.
// That is a model directory's recipe reranker (export.RerankerRecipe), as
// toolindex.WithReranker with WithInterpolation serves it, run by rerank.Pipeline (with
// truncation at Depth and no hierarchy) as eval -method rerank-m runs it, so that Tune picks
// the weight on dev as rerank-m does.
//
// First ranks every tool it can for a query (k <= 0): on a multi-source dataset wrap it in
// metrics.WithinLibraries, so that the reranked tools are the query's library's top Depth.
type StageRerank struct {
	First rank.QueryRanker
	// Score scores the pairs of the queries ranked together in one call (batched across
	// queries: ExportedScorer.ScorePairs) into Cache, where the pipeline finds them; a pair
	// already there is not scored again (tuning on dev, then evaluating the same queries).
	Score rank.PairScorer
	Cache *rerank.ScoreCache
	// Tools is the number of the dataset's tools (the ranked tool indices are below it).
	Tools  int
	Depth  int
	Weight *float64
}

// Pipeline returns the reranking as a rerank.Pipeline over Tools tools: truncation at Depth
// (seen and unseen alike), no hierarchy, Weight's interpolation (minmax; nil: none).
func (s *StageRerank) Pipeline() rerank.Pipeline {
	p := rerank.DefaultParams
	p.MS, p.MU, p.W = s.Depth, s.Depth, 0
	norm := rerank.NormOff
	if s.Weight != nil {
		p.W, norm = float32(*s.Weight), rerank.NormMinMax
	}
	lib := &rerank.Library{Seen: make([]bool, s.Tools)}
	return rerank.Pipeline{Lib: lib, Scorer: s.cache(), Params: p, Mode: rerank.ModeNone, Norm: norm}
}

// cache returns Cache, made on first use.
func (s *StageRerank) cache() *rerank.ScoreCache {
	if s.Cache == nil {
		s.Cache = &rerank.ScoreCache{}
	}
	return s.Cache
}

// Queries ranks qs with First (the top max(k, Depth) tools; k <= 0: every tool), scores the
// pairs of each query and its top Depth tools the cache lacks, in one call to Score, and
// returns the queries as the pipeline's: the ranking as Coarse, its scores as First, and
// relevant[i] (when relevant is not nil) as Relevant.
func (s *StageRerank) Queries(ctx context.Context, qs []rank.Query, relevant [][]int, k int) ([]rerank.Query, error) {
	if s.Depth <= 0 {
		return nil, fmt.Errorf("rerank: depth %d: want > 0", s.Depth)
	}
	if k > 0 {
		k = max(k, s.Depth)
	}
	rs, err := s.First.RankQueries(ctx, qs, k)
	if err != nil {
		return nil, err
	}
	if len(rs) != len(qs) {
		return nil, fmt.Errorf("rerank: first stage returned %d rankings for %d queries", len(rs), len(qs))
	}
	out := make([]rerank.Query, len(qs))
	texts := make([]string, len(qs))
	var pairs []rank.Pair
	cache := s.cache()
	for i, r := range rs {
		if len(r.Scores) != len(r.Tools) {
			return nil, fmt.Errorf("rerank: the first stage ranked query %d without scores", qs[i].Index)
		}
		first := make([]float32, s.Tools)
		for j, t := range r.Tools {
			if t < 0 || t >= s.Tools {
				return nil, fmt.Errorf("rerank: first stage ranked tool %d (%d tools)", t, s.Tools)
			}
			first[t] = r.Scores[j]
		}
		out[i] = rerank.Query{Text: qs[i].Text, Coarse: r.Tools, First: first}
		if relevant != nil {
			out[i].Relevant = relevant[i]
		}
		texts[i] = qs[i].Text
		top := r.Tools[:min(s.Depth, len(r.Tools))]
		if _, err := cache.Score(ctx, texts[i], top); err == nil {
			continue // every pair known
		}
		for _, t := range top {
			pairs = append(pairs, rank.Pair{Query: i, Tool: t})
		}
	}
	if len(pairs) == 0 {
		return out, nil
	}
	if s.Score == nil {
		return nil, fmt.Errorf("rerank: no cross-encoder to score %d pairs", len(pairs))
	}
	scores, err := s.Score(ctx, texts, pairs)
	if err != nil {
		return nil, err
	}
	if len(scores) != len(pairs) {
		return nil, fmt.Errorf("rerank: %d cross-encoder scores for %d pairs", len(scores), len(pairs))
	}
	for j, p := range pairs {
		cache.Put(texts[p.Query], p.Tool, scores[j])
	}
	return out, nil
}

// RankQueries implements rank.QueryRanker: each query's reranked top Depth, then the rest of
// First's ranking, cut to k (k <= 0: all); scores decrease with the rank.
func (s *StageRerank) RankQueries(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	prepared, err := s.Queries(ctx, qs, nil, k)
	if err != nil {
		return nil, err
	}
	pl := s.Pipeline()
	rk, err := pl.RunAll(ctx, prepared)
	if err != nil {
		return nil, err
	}
	return ordered(rk, k), nil
}

// InLibraries returns s as an evaluation of a multi-source dataset should see it when First
// ranks each query within its own library (metrics.WithinLibraries over the dataset): a
// metrics.LibraryRanker, so that the evaluation asks it for the top k, as a server is asked,
// and it asks First for the top max(k, Depth), as the weight was tuned (Queries), instead of
// for every tool of the library (a hybrid recipe then fused each side's whole ranking, not its
// top 100: another first stage than the one served and tuned on).
func (s *StageRerank) InLibraries() rank.QueryRanker { return stageLibraries{s} }

// stageLibraries is a StageRerank whose First ranks within the queries' libraries.
type stageLibraries struct{ *StageRerank }

// RanksWithinLibraries implements metrics.LibraryRanker.
func (stageLibraries) RanksWithinLibraries() {}

// Tune picks the interpolation weight among rerank.Weights(steps) (0, 1/steps, …, 1) on the
// queries dev (Queries with their relevant tools, ranked as deep as o.Metric's cutoff) as
// eval -method rerank-m -weight dev does
// (rerank.Tune: o.Metric maximised, a weight above 0 kept only at a paired t-statistic of
// o.MinT over the first stage's ranking), sets Weight to it and returns its mean dev metric.
func (s *StageRerank) Tune(ctx context.Context, dev []rerank.Query, steps int, o rerank.TuneOptions) (float64, error) {
	w := 0.0
	s.Weight = &w // interpolation on: the grid's weights replace it
	pl := s.Pipeline()
	p := pl.Params
	g := rerank.Grid{M: [][2]int{{p.MS, p.MU}}, TauS: []float32{p.TauS}, TauM: []float32{p.TauM}, N: []int{p.N}, W: rerank.Weights(steps)}
	best, val, err := rerank.Tune(ctx, pl, dev, g, o)
	if err != nil {
		return 0, err
	}
	// The weight as the grid wrote it (0.4, not float32(0.4) widened).
	w, _ = strconv.ParseFloat(strconv.FormatFloat(float64(best.W), 'g', -1, 32), 64)
	return val, nil
}
