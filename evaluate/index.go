package evaluate

import (
	"context"
	"fmt"
	"sync"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/toolindex"
)

// IndexRanker ranks the tools of d with a loaded index (its first stage, refiner and hybrid as
// loaded), in d's tool indices; every tool of the index must be a tool of d. On a dataset of
// several libraries (d.Libraries) each query is ranked from its own library's tools alone, a
// sub-library of the index's (toolindex.Library.With), as a server of that library would rank
// it: a hybrid fusion's BM25 statistics and score normalisation, and an adaptive weight's z1,
// then see that library only, not the union of every library. An ensemble, whose members
// hold their own libraries, and a query of no known library rank every tool (the evaluation
// keeps the query's library's, metrics.WithinLibraries).
func IndexRanker(r *toolindex.Index, d *data.Dataset) rank.QueryRanker {
	pos := make(map[string]int, len(d.Tools))
	for i, t := range d.Tools {
		pos[t.ID] = i
	}
	x := indexRanker{r: r, pos: pos, data: d.Name}
	if m, _, _ := r.Ensemble(); len(d.Libraries) < 2 || m != "" {
		return rank.Texts(x)
	}
	return &libraryRanker{x: x, d: d, all: rank.Texts(x)}
}

// libraryRanker ranks each query within its library's sub-library of the index (IndexRanker).
type libraryRanker struct {
	x    indexRanker
	d    *data.Dataset
	all  rank.QueryRanker // every tool: queries of no known library
	once sync.Once
	subs []*toolindex.Library // by d's library; built on first use
	err  error
}

// RanksWithinLibraries implements metrics.LibraryRanker: asked for the top k, it ranks each
// query's library's top k, as a server of that library answers k (a hybrid fusion then fuses
// each side's top max(k, 100), as served, not the whole library).
func (l *libraryRanker) RanksWithinLibraries() {}

// QueryTokens implements rank.QueryTokenizer with the index's query tower.
func (l *libraryRanker) QueryTokens(text string) (n, limit int) { return l.x.QueryTokens(text) }

// libraries splits the index's library by d's libraries.
func (l *libraryRanker) libraries() ([]*toolindex.Library, error) {
	l.once.Do(func() {
		full := l.x.r.Library()
		others := make([][]string, len(l.d.Libraries)) // others[b]: the ids not in library b
		for i := range full.Len() {
			id := full.Tool(i).ID
			p, ok := l.x.pos[id]
			if !ok {
				l.err = fmt.Errorf("-index: tool %q is not a tool of dataset %s", id, l.x.data)
				return
			}
			for b := range others {
				if l.d.LibraryOf(p) != b {
					others[b] = append(others[b], id)
				}
			}
		}
		l.subs = make([]*toolindex.Library, len(others))
		for b, del := range others {
			if l.subs[b], l.err = full.With(full.Version, nil, nil, del); l.err != nil {
				l.err = fmt.Errorf("library %s of %s: %w", l.d.Libraries[b].Name, l.x.data, l.err)
				return
			}
		}
	})
	return l.subs, l.err
}

// RankQueries implements rank.QueryRanker: each query's top k (k <= 0: all) of its library.
func (l *libraryRanker) RankQueries(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	subs, err := l.libraries()
	if err != nil {
		return nil, err
	}
	out := make([]rank.Ranking, len(qs))
	groups := map[int][]int{} // library -> positions in qs
	for i, q := range qs {
		b := l.d.QueryLibraryAny(q.Index)
		if b >= len(subs) || (b >= 0 && subs[b].Len() == 0) {
			b = -1
		}
		groups[b] = append(groups[b], i)
	}
	for b, idx := range groups {
		sub := make([]rank.Query, len(idx))
		texts := make([]string, len(idx))
		for j, i := range idx {
			sub[j], texts[j] = qs[i], qs[i].Text
		}
		var rk []rank.Ranking
		if b < 0 {
			rk, err = l.all.RankQueries(ctx, sub, k)
		} else {
			n := k
			if n <= 0 || n > subs[b].Len() {
				n = subs[b].Len()
			}
			var res [][]toolindex.Result
			if res, err = l.x.r.RetrieveFrom(ctx, subs[b], texts, n); err == nil {
				rk, err = l.x.rankings(res)
			}
		}
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			out[i] = rk[j]
		}
	}
	return out, nil
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
	return x.rankings(res)
}

// rankings converts the index's results to rankings in dataset tool indices.
func (x indexRanker) rankings(res [][]toolindex.Result) ([]rank.Ranking, error) {
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
