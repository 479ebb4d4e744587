// Package ranktest holds rankers for tests of the packages that evaluate rankings.
package ranktest

import (
	"context"
	"slices"
	"strings"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rank"
)

// Library ranks each query of D from its own library's tools only (D.QueryLibraryAny), in
// tool order with decreasing scores, and says so (RanksWithinLibraries, as
// metrics.LibraryRanker asks); it counts a query's words as its tokens (of at most 8) and
// records in Asks the k of every call. With AllReversed, a call for every tool (k <= 0) ranks
// them in the reverse order: a stage whose top k depends on the depth it is asked for, as a
// fusion normalising its lists is.
type Library struct {
	D           *data.Dataset
	AllReversed bool
	Asks        []int
}

// RankQueries implements rank.QueryRanker.
func (f *Library) RankQueries(_ context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	f.Asks = append(f.Asks, k)
	out := make([]rank.Ranking, len(qs))
	for i, q := range qs {
		lib := f.D.QueryLibraryAny(q.Index)
		for t := range f.D.Tools {
			if f.D.LibraryOf(t) == lib && (k <= 0 || len(out[i].Tools) < k) {
				out[i].Tools = append(out[i].Tools, t)
			}
		}
		if k <= 0 && f.AllReversed {
			slices.Reverse(out[i].Tools)
		}
		for j := range out[i].Tools {
			out[i].Scores = append(out[i].Scores, float32(len(out[i].Tools)-j))
		}
	}
	return out, nil
}

// RanksWithinLibraries marks f as a ranker of each query within its own library.
func (*Library) RanksWithinLibraries() {}

// QueryTokens implements rank.QueryTokenizer.
func (*Library) QueryTokens(text string) (int, int) { return len(strings.Fields(text)), 8 }
