package evalcmd

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
	if o.hybrid != "" || o.hybridWeight != -1 {
		w, err := hybridWeight(o.hybrid, o.hybridWeight)
		if err != nil {
			return nil, "", err
		}
		opts = append(opts, retriever.WithHybrid(o.hybrid, w))
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
	if h, w := r.Hybrid(); h == retriever.HybridRRF {
		desc += ", hybrid rrf with bm25"
	} else if h != "" {
		desc += fmt.Sprintf(", hybrid %s with bm25, dense weight %g", h, w)
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

// hybridWeight checks -hybrid and -hybrid-weight (w, -1 when not given) as serve does and
// returns the dense weight: 0 for rrf, 0.5 by default for minmax and zscore.
func hybridWeight(method string, w float64) (float64, error) {
	switch method {
	case "":
		return 0, fmt.Errorf("-hybrid-weight needs -hybrid minmax or zscore")
	case retriever.HybridRRF:
		if w != -1 {
			return 0, fmt.Errorf("-hybrid-weight applies to -hybrid minmax or zscore; rrf has no weight")
		}
		return 0, nil
	case retriever.HybridMinMax, retriever.HybridZScore:
		if w == -1 {
			return 0.5, nil
		}
		if !(w >= 0 && w <= 1) {
			return 0, fmt.Errorf("-hybrid-weight %g: want a weight in [0, 1]", w)
		}
		return w, nil
	}
	return 0, fmt.Errorf("-hybrid %q: want rrf, minmax or zscore", method)
}
