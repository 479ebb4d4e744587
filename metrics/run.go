package metrics

import (
	"context"
	"fmt"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rank"
)

// EvaluateSplit is the one evaluation loop: it ranks the judged queries of s with r (the top
// max(ks) tools each) and evaluates the rankings at the cutoffs ks (DefaultKs when empty),
// overall and per subset (by number of relevant tools; seen and unseen tools; and, when r is a
// rank.QueryTokenizer with a budget, queries within it and queries its encoder truncates). s is a split of d: a named one (d.Split) or one derived from d,
// such as a dev split carved from the training queries (rundir.Split.Apply).
func EvaluateSplit(ctx context.Context, d *data.Dataset, s *data.Split, r rank.QueryRanker, ks []int) (Report, error) {
	if len(ks) == 0 {
		ks = DefaultKs
	}
	k := 0
	for _, v := range ks {
		if v <= 0 {
			return Report{}, fmt.Errorf("evaluate %s/%s: cutoff %d, want > 0", d.Name, s.Name, v)
		}
		k = max(k, v)
	}
	judged := s.Judged()
	qs := make([]rank.Query, len(judged))
	for i, q := range judged {
		if q < 0 || q >= len(d.Queries) {
			return Report{}, fmt.Errorf("evaluate %s/%s: query index %d out of range (%d queries)", d.Name, s.Name, q, len(d.Queries))
		}
		qs[i] = rank.Query{Index: q, Text: d.Queries[q].Text}
	}
	if len(d.Libraries) > 1 {
		r = within(d, s, r)
	}
	var rankings []rank.Ranking
	if len(qs) > 0 {
		var err error
		if rankings, err = r.RankQueries(ctx, qs, k); err != nil {
			return Report{}, fmt.Errorf("rank %s/%s: %w", d.Name, s.Name, err)
		}
	}
	if len(rankings) != len(qs) {
		return Report{}, fmt.Errorf("evaluate %s/%s: %d rankings for %d queries", d.Name, s.Name, len(rankings), len(qs))
	}
	var tokens []int
	limit := 0
	if t, ok := r.(rank.QueryTokenizer); ok {
		tokens = make([]int, len(qs))
		for i, q := range qs {
			tokens[i], limit = t.QueryTokens(q.Text)
		}
	}
	rep := report(d, s, judged, rankings, ks, tokens, limit)
	rep.Overall.Skipped = len(s.Queries) - len(judged)
	return rep, nil
}

// EvaluateDev returns the overall metrics of r on the dev split s at the cutoffs ks
// (EvaluateSplit's Report.Map): what training's dev evaluation records.
func EvaluateDev(ctx context.Context, d *data.Dataset, s *data.Split, r rank.QueryRanker, ks []int) (map[string]float64, error) {
	if len(d.Libraries) > 1 {
		return evaluateLibraries(ctx, d, s, r, ks)
	}
	rep, err := EvaluateSplit(ctx, d, s, r, ks)
	if err != nil {
		return nil, err
	}
	return rep.Map(), nil
}

// Run evaluates r on the named split of d (EvaluateSplit over the query texts).
func Run(ctx context.Context, d *data.Dataset, split string, r rank.Ranker, ks []int) (Report, error) {
	s, err := d.Split(split)
	if err != nil {
		return Report{}, err
	}
	return EvaluateSplit(ctx, d, s, rank.Texts(r), ks)
}
