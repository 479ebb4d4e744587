package main

import (
	"context"
	"fmt"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/retriever"
)

// buildIndex ranks with the exported index -index as retriever.Load serves it (its first
// stage, its packaged refiner unless -no-refiner, its tool vectors), so the figures are those
// of what a server answers. The index's tools must be tools of the dataset (by id).
func buildIndex(o *options, d *data.Dataset) (retrieve.QueryRanker, string, error) {
	be, err := backend.Open(backend.Name(o.backend))
	if err != nil {
		return nil, "", fmt.Errorf("-backend: %w", err)
	}
	opts := []retriever.Option{retriever.WithBackend(be)}
	if o.noRefiner {
		opts = append(opts, retriever.WithoutRefiner())
	}
	r, err := retriever.Load(o.index, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("-index: %w", err)
	}
	pos := make(map[string]int, len(d.Tools))
	for i, t := range d.Tools {
		pos[t.ID] = i
	}
	desc := fmt.Sprintf("index %s (%s first stage", o.index, r.FirstStage())
	if dir, cands, n := r.Refiner(); dir != "" {
		desc += fmt.Sprintf(", refiner N %d over %s candidates", n, cands)
	}
	return retrieve.Texts(indexRanker{r: r, pos: pos, data: d.Name}), desc + ")", nil
}

// indexRanker is a retrieve.Ranker over a loaded index, in dataset tool indices.
type indexRanker struct {
	r    *retriever.Retriever
	pos  map[string]int
	data string
}

// Rank implements retrieve.Ranker: k <= 0 (or more than the index has) ranks every tool.
func (x indexRanker) Rank(ctx context.Context, queries []string, k int) ([]retrieve.Ranking, error) {
	if n := x.r.Len(); k <= 0 || k > n {
		k = n
	}
	res, err := x.r.RetrieveBatch(ctx, queries, k)
	if err != nil {
		return nil, err
	}
	out := make([]retrieve.Ranking, len(res))
	for i, rs := range res {
		out[i] = retrieve.Ranking{Tools: make([]int, len(rs)), Scores: make([]float32, len(rs))}
		for j, t := range rs {
			p, ok := x.pos[t.ToolID]
			if !ok {
				return nil, fmt.Errorf("-index: tool %q is not a tool of dataset %s", t.ToolID, x.data)
			}
			out[i].Tools[j], out[i].Scores[j] = p, t.Score
		}
	}
	return out, nil
}
