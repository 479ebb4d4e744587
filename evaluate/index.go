package evaluate

import (
	"context"
	"fmt"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/toolindex"
)

// IndexRanker ranks the tools of d with a loaded index (its first stage, refiner and hybrid as
// loaded), in d's tool indices; every tool of the index must be a tool of d.
func IndexRanker(r *toolindex.Index, d *data.Dataset) rank.QueryRanker {
	pos := make(map[string]int, len(d.Tools))
	for i, t := range d.Tools {
		pos[t.ID] = i
	}
	return rank.Texts(indexRanker{r: r, pos: pos, data: d.Name})
}

// indexRanker is a rank.Ranker over a loaded index, in dataset tool indices.
type indexRanker struct {
	r    *toolindex.Index
	pos  map[string]int
	data string
}

// QueryTokens implements rank.QueryTokenizer with the index's query tower.
func (x indexRanker) QueryTokens(text string) (n, limit int) { return x.r.QueryTokens(text) }

// Rank implements rank.Ranker: k <= 0 (or more than the index has) ranks every tool.
func (x indexRanker) Rank(ctx context.Context, queries []string, k int) ([]rank.Ranking, error) {
	if n := x.r.Len(); k <= 0 || k > n {
		k = n
	}
	res, err := x.r.RetrieveBatch(ctx, queries, k)
	if err != nil {
		return nil, err
	}
	out := make([]rank.Ranking, len(res))
	for i, rs := range res {
		out[i] = rank.Ranking{Tools: make([]int, len(rs)), Scores: make([]float32, len(rs))}
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
