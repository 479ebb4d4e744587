package metrics

import (
	"context"
	"fmt"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rank"
)

// LibraryKeys are the dev metrics EvaluateDev reports per library of a multi-source dataset,
// as "lib/NAME/KEY" beside the pooled ones.
var LibraryKeys = []string{"recall@5", "ndcg@5"}

// withinLibraries restricts r's rankings of the queries of split s to the tools of each
// query's library (d.Libraries): r ranks every tool, and the tools of other libraries are
// dropped before the top k is kept. A query with no relevant tool keeps r's ranking.
type withinLibraries struct {
	d *data.Dataset
	s *data.Split
	r rank.QueryRanker
}

// RankQueries implements rank.QueryRanker.
func (w withinLibraries) RankQueries(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	all, err := w.r.RankQueries(ctx, qs, 0)
	if err != nil {
		return nil, err
	}
	if len(all) != len(qs) {
		return nil, fmt.Errorf("within libraries: %d rankings for %d queries", len(all), len(qs))
	}
	out := make([]rank.Ranking, len(qs))
	for i, q := range qs {
		lib := -1
		if w.s != nil {
			lib = w.d.QueryLibrary(w.s, q.Index)
		}
		if lib < 0 {
			lib = w.d.QueryLibraryAny(q.Index)
		}
		r := all[i]
		if lib < 0 {
			out[i] = truncate(r, k)
			continue
		}
		var o rank.Ranking
		for j, t := range r.Tools {
			if w.d.LibraryOf(t) != lib {
				continue
			}
			o.Tools = append(o.Tools, t)
			if r.Scores != nil {
				o.Scores = append(o.Scores, r.Scores[j])
			}
			if k > 0 && len(o.Tools) == k {
				break
			}
		}
		out[i] = o
	}
	return out, nil
}

// WithinLibraries returns r restricted, on a multi-source dataset d (d.Libraries), to the
// tools of each query's library (its relevant tools' library in s, or in any split of d when
// s is nil or does not judge it), as every evaluation of such a dataset ranks; r itself
// otherwise. Stages that rank candidates of their own before the evaluation (fusion inputs
// tuned on dev) wrap their inputs with it.
func WithinLibraries(d *data.Dataset, s *data.Split, r rank.QueryRanker) rank.QueryRanker {
	if len(d.Libraries) < 2 {
		return r
	}
	return within(d, s, r)
}

// LibraryRanker is implemented by a ranker that already ranks each query from its own
// library's tools (evaluate.IndexRanker on a multi-source dataset): WithinLibraries passes it
// through, so that it is asked for the top k, as a server is, not for every tool.
type LibraryRanker interface {
	rank.QueryRanker
	RanksWithinLibraries()
}

// within returns r restricted to each query's library, a rank.QueryTokenizer when r is one; a
// LibraryRanker as it is.
func within(d *data.Dataset, s *data.Split, r rank.QueryRanker) rank.QueryRanker {
	if _, ok := r.(LibraryRanker); ok {
		return r
	}
	w := withinLibraries{d, s, r}
	if t, ok := r.(rank.QueryTokenizer); ok {
		return withinTokens{w, t}
	}
	return w
}

// withinTokens is withinLibraries passing the inner ranker's token counts through.
type withinTokens struct {
	withinLibraries
	t rank.QueryTokenizer
}

// QueryTokens implements rank.QueryTokenizer.
func (w withinTokens) QueryTokens(text string) (int, int) { return w.t.QueryTokens(text) }

func truncate(r rank.Ranking, k int) rank.Ranking {
	if k > 0 && len(r.Tools) > k {
		r.Tools = r.Tools[:k]
		if r.Scores != nil {
			r.Scores = r.Scores[:k]
		}
	}
	return r
}

// evaluateLibraries is EvaluateDev on a multi-source dataset: the dev queries are ranked once,
// within their libraries, and evaluated pooled (every dev query, as EvaluateSplit) and per
// library ("lib/NAME/KEY" for the LibraryKeys).
func evaluateLibraries(ctx context.Context, d *data.Dataset, s *data.Split, r rank.QueryRanker, ks []int) (map[string]float64, error) {
	k := 0
	for _, v := range ks {
		k = max(k, v)
	}
	if len(ks) == 0 {
		for _, v := range DefaultKs {
			k = max(k, v)
		}
	}
	judged := s.Judged()
	qs := make([]rank.Query, len(judged))
	for i, q := range judged {
		if q < 0 || q >= len(d.Queries) {
			return nil, fmt.Errorf("evaluate %s/%s: query index %d out of range (%d queries)", d.Name, s.Name, q, len(d.Queries))
		}
		qs[i] = rank.Query{Index: q, Text: d.Queries[q].Text}
	}
	fixed := rank.Fixed{}
	if len(qs) > 0 {
		rs, err := within(d, s, r).RankQueries(ctx, qs, k)
		if err != nil {
			return nil, fmt.Errorf("rank %s/%s: %w", d.Name, s.Name, err)
		}
		for i, q := range qs {
			fixed[q.Index] = rs[i].Tools
		}
	}
	rep, err := EvaluateSplit(ctx, d, s, fixed, ks)
	if err != nil {
		return nil, err
	}
	out := rep.Map()
	for l, lib := range d.Libraries {
		sub, _ := s.Divide(func(q int) bool { return d.QueryLibrary(s, q) != l })
		if len(sub.Queries) == 0 {
			continue
		}
		sub.Name = s.Name + "/" + lib.Name
		lr, err := EvaluateSplit(ctx, d, sub, fixed, ks)
		if err != nil {
			return nil, err
		}
		m := lr.Map()
		for _, key := range LibraryKeys {
			if v, ok := m[key]; ok {
				out["lib/"+lib.Name+"/"+key] = v
			}
		}
	}
	return out, nil
}
