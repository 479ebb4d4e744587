package rank

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// lenRanker scores tool i of n as -|len(query) - i|: the tool numbered like the query's length
// first.
type lenRanker struct{ n int }

func (r lenRanker) Rank(_ context.Context, qs []string, k int) ([]Ranking, error) {
	out := make([]Ranking, len(qs))
	for i, q := range qs {
		s := make([]float32, r.n)
		for t := range s {
			s[t] = -float32(max(len(q)-t, t-len(q)))
		}
		out[i] = TopK(s, k)
	}
	return out, nil
}

func TestQueryRankers(t *testing.T) {
	qs := []Query{{Index: 7, Text: "ab"}, {Index: 3, Text: "abcd"}}
	ctx := context.Background()
	// scores[q][t] for the rerank scorer: by query text, then tool.
	pairScores := map[string][]float32{"ab": {0, 5, 1, 9, 9, 0}, "abcd": {4, 3, 2, 1, 0, 7}}
	var scored []Pair
	score := PairScorer(func(_ context.Context, texts []string, ps []Pair) ([]float32, error) {
		scored = append([]Pair(nil), ps...)
		out := make([]float32, len(ps))
		for i, p := range ps {
			out[i] = pairScores[texts[p.Query]][p.Tool]
		}
		return out, nil
	})
	for _, tc := range []struct {
		name   string
		r      QueryRanker
		k      int
		want   [][]int
		scored []Pair // pairs the rerank scorer saw, when it is one
	}{
		// "ab": 2 1 3 0 4 5; "abcd": 4 3 5 2 1 0 (ties to the lower tool).
		{"texts", Texts(lenRanker{6}), 3, [][]int{{2, 1, 3}, {4, 3, 5}}, nil},
		{"texts all", Texts(lenRanker{6}), 0, [][]int{{2, 1, 3, 0, 4, 5}, {4, 3, 5, 2, 1, 0}}, nil},
		{"fixed", Fixed{7: {5, 4, 3}, 3: {1}, 9: {0}}, 2, [][]int{{5, 4}, {1}}, nil},
		{"score func", ScoreFunc(func(_ context.Context, q Query) ([]float32, error) {
			s := make([]float32, 10)
			s[q.Index] = 1
			return s, nil
		}), 2, [][]int{{7, 0}, {3, 0}}, nil},
		// Rerank the top 3 of the text ranker: "ab" {2,1,3} by scores 1,5,9 -> 3 1 2;
		// "abcd" {4,3,5} by 0,1,7 -> 5 3 4.
		{"rerank depth 3", &Rerank{First: Texts(lenRanker{6}), Depth: 3, Score: score}, 0, [][]int{{3, 1, 2}, {5, 3, 4}},
			[]Pair{{0, 2}, {0, 1}, {0, 3}, {1, 4}, {1, 3}, {1, 5}}},
		{"rerank top 2", &Rerank{First: Texts(lenRanker{6}), Depth: 3, Score: score}, 2, [][]int{{3, 1}, {5, 3}}, nil},
		// Tools 3 and 4 of "ab" tie at 9: First's order (3 before 4) is kept, not the tool order.
		{"rerank ties keep first order", &Rerank{First: Fixed{7: {4, 3, 0}, 3: {0, 1}}, Score: score}, 0, [][]int{{4, 3, 0}, {0, 1}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scored = nil
			rk, err := tc.r.RankQueries(ctx, qs, tc.k)
			if err != nil {
				t.Fatal(err)
			}
			var got [][]int
			for _, r := range rk {
				got = append(got, r.Tools)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("rankings %v, want %v", got, tc.want)
			}
			if tc.scored != nil && !reflect.DeepEqual(scored, tc.scored) {
				t.Errorf("scored pairs %v, want %v", scored, tc.scored)
			}
		})
	}
}

func TestRerankScores(t *testing.T) {
	r := &Rerank{First: Fixed{1: {8, 6}}, Score: func(_ context.Context, _ []string, ps []Pair) ([]float32, error) {
		out := make([]float32, len(ps))
		for i, p := range ps {
			out[i] = float32(p.Tool) / 10
		}
		return out, nil
	}}
	rk, err := r.RankQueries(context.Background(), []Query{{Index: 1}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Ranking{Tools: []int{8, 6}, Scores: []float32{0.8, 0.6}}); !reflect.DeepEqual(rk[0], want) {
		t.Errorf("ranking %+v, want %+v", rk[0], want)
	}
}

func TestQueryRankerErrors(t *testing.T) {
	ctx := context.Background()
	qs := []Query{{Index: 1, Text: "x"}}
	short := PairScorer(func(context.Context, []string, []Pair) ([]float32, error) { return []float32{1}, nil })
	failing := PairScorer(func(context.Context, []string, []Pair) ([]float32, error) { return nil, errors.New("boom") })
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		r    QueryRanker
		want string
	}{
		{"fixed without the query", ctx, Fixed{2: {1}}, "none for query 1"},
		{"fixed cancelled", cancelled, Fixed{1: {1}}, "canceled"},
		{"score func cancelled", cancelled, ScoreFunc(func(context.Context, Query) ([]float32, error) { return nil, nil }), "canceled"},
		{"score func error", ctx, ScoreFunc(func(context.Context, Query) ([]float32, error) { return nil, errors.New("boom") }), "boom"},
		{"rerank first error", ctx, &Rerank{First: Fixed{}, Score: short}, "none for query 1"},
		{"rerank scorer error", ctx, &Rerank{First: Fixed{1: {0}}, Score: failing}, "rerank: boom"},
		{"rerank too few scores", ctx, &Rerank{First: Fixed{1: {0, 1}}, Score: short}, "1 scores for 2 pairs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.r.RankQueries(tc.ctx, qs, 3); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

type countingRanker struct{}

func (countingRanker) Rank(ctx context.Context, queries []string, k int) ([]Ranking, error) {
	return make([]Ranking, len(queries)), nil
}

func (countingRanker) QueryTokens(text string) (n, limit int) { return len(text), 4 }

type plainRanker struct{}

func (plainRanker) Rank(ctx context.Context, queries []string, k int) ([]Ranking, error) {
	return make([]Ranking, len(queries)), nil
}

func TestTextsQueryTokens(t *testing.T) {
	for _, tc := range []struct {
		name     string
		r        Ranker
		n, limit int
	}{
		{"counting ranker", countingRanker{}, 6, 4},
		{"plain ranker", plainRanker{}, 0, 0},
	} {
		q, ok := Texts(tc.r).(QueryTokenizer)
		if !ok {
			t.Fatalf("%s: Texts does not implement QueryTokenizer", tc.name)
		}
		if n, limit := q.QueryTokens("abcdef"); n != tc.n || limit != tc.limit {
			t.Errorf("%s: QueryTokens = %d, %d, want %d, %d", tc.name, n, limit, tc.n, tc.limit)
		}
	}
}
