package rerank

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// CosineMatrix returns the cosine similarity of every pair of vectors (a zero vector's is
// 0 with every other, 1 with itself): the similarities Alg. 2 groups APIs by, computed
// once from a first stage's tool vectors.
func CosineMatrix(v [][]float32) [][]float32 {
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

// TuneOptions are how Tune scores and reports a grid search.
type TuneOptions struct {
	// Metric names the dev metric (such as "ndcg@5") in the report; Score computes it for
	// one query (metrics.ParseMetric(Metric)).
	Metric string
	Score  func(ranked, relevant []int) float64
	// MinT is the paired t-statistic a weight above 0 must reach over the first stage's
	// ranking to be kept (0: keep the dev optimum).
	MinT float64
	// Log receives the search's report lines (nil: none).
	Log io.Writer
}

// Tune searches g on the dev queries qs for pl and returns the best parameters and their
// mean dev metric. With several interpolation weights it reports the best dev metric of
// each weight (one line) to o.Log; with one weight, or no interpolation, it is Search.
//
// A dev optimum of a few hundred queries moves by noise: a weight above 0 is kept only when
// its per-query gain over the first stage's ranking (w = 0, in the grid) has a paired
// t-statistic of at least o.MinT (0: always kept); otherwise the result is w = 0, the first
// stage's ranking, with that ranking's dev metric.
func Tune(ctx context.Context, pl Pipeline, qs []Query, g Grid, o TuneOptions) (Params, float64, error) {
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	if pl.Norm == NormOff || len(g.W) <= 1 {
		return Search(ctx, pl, qs, g, o.Score)
	}
	best, bestVal := Params{}, math.Inf(-1)
	var curve []string
	for _, w := range g.W { // in order: ties go to the smaller weight
		gw := g
		gw.W = []float32{w}
		p, v, err := Search(ctx, pl, qs, gw, o.Score)
		if err != nil {
			return Params{}, 0, err
		}
		curve = append(curve, fmt.Sprintf("%g:%.2f", w, 100*v))
		if v > bestVal {
			best, bestVal = p, v
		}
	}
	fmt.Fprintf(log, "rerank: interpolation %s: dev %s by weight (0 = the retriever alone) %s: w=%g\n", pl.Norm, o.Metric, strings.Join(curve, " "), best.W)
	if o.MinT <= 0 || best.W == 0 || !slices.Contains(g.W, 0) {
		return best, bestVal, nil
	}
	tuned, first := pl, pl
	tuned.Params, first.Params = best, best
	first.Params.W = 0
	a, err := PerQuery(ctx, tuned, qs, o.Score)
	if err != nil {
		return Params{}, 0, err
	}
	b, err := PerQuery(ctx, first, qs, o.Score)
	if err != nil {
		return Params{}, 0, err
	}
	t := PairedT(a, b)
	if t >= o.MinT {
		fmt.Fprintf(log, "rerank: w=%g beats the retriever on dev with paired t %.2f >= -min-t %g\n", best.W, t, o.MinT)
		return best, bestVal, nil
	}
	retr := 0.0
	for _, v := range b {
		retr += v / float64(len(b))
	}
	fmt.Fprintf(log, "rerank: w=%g gains %+.2f dev %s over the retriever with paired t %.2f < -min-t %g: w=0, the retriever's ranking\n",
		best.W, 100*(bestVal-retr), o.Metric, t, o.MinT)
	return first.Params, retr, nil
}
