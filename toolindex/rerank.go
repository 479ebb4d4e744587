package toolindex

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/rerank"
)

// recordedReranker applies the reranker man records (the recipe of the model the index in
// dir was exported from: its cross-encoder inside dir) to o, unless o says otherwise
// (WithReranker, WithoutRecipe); it reports whether it did. WithInterpolation's weight
// replaces the recorded one.
func recordedReranker(o *options, man *export.Manifest, dir string) (bool, error) {
	rr := man.Reranker
	if o.rerankSet || o.noRecipe || rr == nil {
		return false, nil
	}
	if !filepath.IsLocal(filepath.FromSlash(rr.Path)) || rr.Depth <= 0 || (rr.Weight != nil && !(*rr.Weight >= 0 && *rr.Weight <= 1)) {
		return false, fmt.Errorf("retriever: index %s: %s reranker %+v: want a path inside the index, a depth > 0 and a weight in [0, 1]", dir, export.ManifestFile, *rr)
	}
	o.rerankDir, o.rerankTopM = filepath.Join(dir, filepath.FromSlash(rr.Path)), rr.Depth
	if rr.Weight != nil && !o.interp {
		o.interp, o.interpW = true, float32(*rr.Weight)
	}
	return true, nil
}

// Reranker describes the reranker stage: the cross-encoder's directory, the number of top
// tools it rescores and its interpolation weight (nil: the cross-encoder's order alone); ""
// without one.
func (r *Index) Reranker() (dir string, m int, w *float64) {
	if r.rerank == nil {
		return "", 0, nil
	}
	if r.interp {
		x := float64(r.interpW)
		w = &x
	}
	return r.rerank.Source, r.topM, w
}

// retrieve answers queries (embedded as texts) from lib with every stage: the first stage
// (retrieveFrom: dense or hybrid, ensemble, refiner), with clauses merged over the query's
// clauses (WithClauses), then the reranker over the top m.
func (r *Index) retrieve(ctx context.Context, lib *Library, texts, queries []string, k int, clauses bool) ([][]Result, error) {
	m := k
	if r.rerank != nil {
		m = max(k, r.topM)
	}
	var res [][]Result
	var err error
	if clauses {
		res, err = r.retrieveClauses(ctx, lib, queries, m)
	} else {
		res, err = r.retrieveFrom(ctx, lib, texts, queries, m)
	}
	if err != nil {
		return nil, err
	}
	for i := range res {
		if r.rerank != nil {
			if err := r.rerankResults(ctx, queries[i], res[i]); err != nil {
				return nil, err
			}
		}
		res[i] = res[i][:min(k, len(res[i]))]
	}
	return res, nil
}

// rerankResults reorders the top topM of res (the first stage's results, best first) by the
// cross-encoder's sigmoid score of (query, tool text), or with interpolation by
// w·minmax(that score) + (1−w)·minmax(the first stage's score, RetrievalScore) over them;
// the results after them keep their order, with lower, decreasing scores.
func (r *Index) rerankResults(ctx context.Context, query string, res []Result) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.interp && r.interpW == 0 { // the retrieval order: the reranker has no say
		return nil
	}
	top := res[:min(r.topM, len(res))]
	if len(top) == 0 {
		return nil
	}
	qs := make([]string, len(top))
	docs := make([]string, len(top))
	for i, x := range top {
		qs[i], docs[i] = query, x.Text
	}
	logits, err := r.rerank.Score(qs, docs)
	if err != nil {
		return fmt.Errorf("retriever: rerank: %w", err)
	}
	for i := range top {
		top[i].Score = export.Sigmoid(logits[i][0])
	}
	if r.interp {
		ce, first := make([]float32, len(top)), make([]float32, len(top))
		for i, x := range top {
			ce[i], first[i] = x.Score, x.RetrievalScore
		}
		fused, err := rerank.Interpolate(ce, first, r.interpW, rerank.NormMinMax)
		if err != nil {
			return fmt.Errorf("retriever: %w", err)
		}
		for i := range top {
			top[i].Score = fused[i]
		}
	}
	sort.SliceStable(top, func(a, b int) bool { return top[a].Score > top[b].Score })
	low := top[len(top)-1].Score
	for i := len(top); i < len(res); i++ {
		res[i].Score = low - float32(i-len(top)+1)
	}
	return nil
}
