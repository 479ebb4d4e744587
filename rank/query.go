package rank

import (
	"context"
	"fmt"
)

// Query is one query of a dataset as evaluation hands it to a QueryRanker: its index among
// the dataset's queries and its text.
type Query struct {
	Index int
	Text  string
}

// QueryRanker ranks queries of a dataset. Unlike a Ranker it sees each query's index, so it
// can rank from inputs computed ahead per query (stage-1 embeddings, candidate lists, the
// output of a pipeline). It returns one Ranking per query, in order, of at most k tools
// (k <= 0: all it has).
type QueryRanker interface {
	RankQueries(ctx context.Context, qs []Query, k int) ([]Ranking, error)
}

// Texts makes a QueryRanker of a Ranker: it ranks the queries' texts.
func Texts(r Ranker) QueryRanker { return texts{r} }

type texts struct{ r Ranker }

func (t texts) RankQueries(ctx context.Context, qs []Query, k int) ([]Ranking, error) {
	s := make([]string, len(qs))
	for i, q := range qs {
		s[i] = q.Text
	}
	return t.r.Rank(ctx, s, k)
}

// Fixed is a QueryRanker of rankings computed in advance: the tools of each query index, best
// first. Its Rankings have no Scores.
type Fixed map[int][]int

// RankQueries implements QueryRanker; a query without a ranking is an error.
func (f Fixed) RankQueries(ctx context.Context, qs []Query, k int) ([]Ranking, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]Ranking, len(qs))
	for i, q := range qs {
		tools, ok := f[q.Index]
		if !ok {
			return nil, fmt.Errorf("fixed rankings: none for query %d (%q)", q.Index, q.Text)
		}
		if k > 0 && len(tools) > k {
			tools = tools[:k]
		}
		out[i] = Ranking{Tools: tools}
	}
	return out, nil
}

// ScoreFunc is a QueryRanker that scores every tool for one query at a time (one score per
// tool, indexed by tool) and keeps the top k with TopK.
type ScoreFunc func(ctx context.Context, q Query) ([]float32, error)

// RankQueries implements QueryRanker.
func (f ScoreFunc) RankQueries(ctx context.Context, qs []Query, k int) ([]Ranking, error) {
	out := make([]Ranking, len(qs))
	for i, q := range qs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s, err := f(ctx, q)
		if err != nil {
			return nil, err
		}
		out[i] = TopK(s, k)
	}
	return out, nil
}

// Pair is one (query, tool) pair to score: an index into a list of query texts and a tool
// index.
type Pair struct {
	Query int
	Tool  int
}

// PairScorer scores pairs[i] = (queries[pairs[i].Query], tool pairs[i].Tool), one score per
// pair, higher is better (a cross-encoder).
type PairScorer func(ctx context.Context, queries []string, pairs []Pair) ([]float32, error)

// Rerank is a QueryRanker that reorders the first Depth tools First returns for each query
// by Score, best first; ties keep First's order. All queries' pairs go to Score in one call,
// so a scorer can batch across queries.
type Rerank struct {
	First QueryRanker
	// Depth is how many of First's tools are reranked per query; <= 0: all it returns.
	Depth int
	Score PairScorer
}

// RankQueries implements QueryRanker: the top k of each query's reranked candidates (k <= 0:
// all of them).
func (r *Rerank) RankQueries(ctx context.Context, qs []Query, k int) ([]Ranking, error) {
	cands, err := r.First.RankQueries(ctx, qs, r.Depth)
	if err != nil {
		return nil, err
	}
	if len(cands) != len(qs) {
		return nil, fmt.Errorf("rerank: first stage returned %d rankings for %d queries", len(cands), len(qs))
	}
	texts := make([]string, len(qs))
	var pairs []Pair
	for i, q := range qs {
		texts[i] = q.Text
		tools := cands[i].Tools
		if r.Depth > 0 && len(tools) > r.Depth {
			tools = tools[:r.Depth]
		}
		cands[i].Tools = tools
		for _, t := range tools {
			pairs = append(pairs, Pair{Query: i, Tool: t})
		}
	}
	scores, err := r.Score(ctx, texts, pairs)
	if err != nil {
		return nil, fmt.Errorf("rerank: %w", err)
	}
	if len(scores) != len(pairs) {
		return nil, fmt.Errorf("rerank: scorer returned %d scores for %d pairs", len(scores), len(pairs))
	}
	out := make([]Ranking, len(qs))
	off := 0
	for i, c := range cands {
		n := len(c.Tools)
		top := TopK(scores[off:off+n], k)
		off += n
		tools := make([]int, len(top.Tools))
		for j, pos := range top.Tools {
			tools[j] = c.Tools[pos]
		}
		out[i] = Ranking{Tools: tools, Scores: top.Scores}
	}
	return out, nil
}
