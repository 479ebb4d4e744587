package toolindex

import (
	"context"
	"fmt"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// WithClauses ranks each query whole and clause by clause (rerank.SplitClauses) with the
// index's stages and merges the rankings (rerank.MergeClauses), so that a query stating
// several needs gets each need's tools. nil: the whole query only, also when the index
// records clauses from its model's recipe (export.Manifest.Clauses), which Load applies
// otherwise unless WithoutRecipe.
func WithClauses(c *rerank.ClauseOptions) Option {
	return func(o *options) {
		o.clauses, o.clausesSet = nil, true
		if c != nil {
			v := *c
			o.clauses = &v
		}
	}
}

// recordedClauses applies the clauses man records to o, unless o says otherwise; it reports
// whether it did.
func recordedClauses(o *options, man *export.Manifest) bool {
	if o.clausesSet || o.noRecipe || man.Clauses == nil {
		return false
	}
	c := man.Clauses.Options()
	o.clauses = &c
	return true
}

// Clauses returns the per-clause retrieval the index applies (nil: none).
func (r *Index) Clauses() *rerank.ClauseOptions {
	if r.clauses == nil {
		return nil
	}
	c := *r.clauses
	return &c
}

// retrieveClauses answers queries from lib with r's stages, each query whole and by clause,
// merged. A merged result keeps the fields of the ranking that ranked it best (the whole
// query's when it has the tool) with the merged score as Score and RetrievalScore.
func (r *Index) retrieveClauses(ctx context.Context, lib *Library, queries []string, k int) ([][]Result, error) {
	in := &clauseRanker{r: r, lib: lib, seen: map[[2]int]Result{}}
	c, err := rerank.WithClauses(in, *r.clauses)
	if err != nil {
		return nil, fmt.Errorf("retriever: %w", err)
	}
	qs := make([]rank.Query, len(queries))
	for i, q := range queries {
		qs[i] = rank.Query{Index: i, Text: q}
	}
	rs, err := c.RankQueries(ctx, qs, k)
	if err != nil {
		return nil, err
	}
	out := make([][]Result, len(rs))
	for i, rk := range rs {
		out[i] = make([]Result, len(rk.Tools))
		for j, t := range rk.Tools {
			res, ok := in.seen[[2]int{i, t}]
			if !ok {
				return nil, fmt.Errorf("retriever: clauses: tool %d ranked by no stage", t)
			}
			res.Score, res.RetrievalScore = rk.Scores[j], rk.Scores[j]
			out[i][j] = res
		}
	}
	return out, nil
}

// clauseRanker is a rank.QueryRanker over one library version of an index, in the index's
// tool positions; seen keeps, by (query index, tool position), a Result of every tool it
// returned for the query or one of its clauses, the first (the whole query's, which
// rerank.Clauses ranks first) kept.
type clauseRanker struct {
	r    *Index
	lib  *Library
	seen map[[2]int]Result
}

// RankQueries implements rank.QueryRanker: k <= 0 ranks every tool of the library.
func (c *clauseRanker) RankQueries(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	if n := c.lib.Len(); k <= 0 || k > n {
		k = n
	}
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Text
	}
	res, err := c.r.retrieveFrom(ctx, c.lib, c.r.mark(texts, 0), texts, k)
	if err != nil {
		return nil, err
	}
	out := make([]rank.Ranking, len(res))
	for i, rs := range res {
		out[i] = rank.Ranking{Tools: make([]int, len(rs)), Scores: make([]float32, len(rs))}
		for j, t := range rs {
			out[i].Tools[j], out[i].Scores[j] = t.Index, t.Score
			key := [2]int{qs[i].Index, t.Index}
			if _, ok := c.seen[key]; !ok {
				c.seen[key] = t
			}
		}
	}
	return out, nil
}
