package metrics

import (
	"context"
	"fmt"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/retrieve"
)

// Run ranks every query of the split with r (top max(ks) tools) and evaluates the rankings.
func Run(ctx context.Context, d *data.Dataset, split string, r retrieve.Ranker, ks []int) (Report, error) {
	s, err := d.Split(split)
	if err != nil {
		return Report{}, err
	}
	if len(ks) == 0 {
		ks = DefaultKs
	}
	k := 0
	for _, v := range ks {
		k = max(k, v)
	}
	texts := make([]string, len(s.Queries))
	for i, q := range s.Queries {
		texts[i] = d.Queries[q].Text
	}
	rankings, err := r.Rank(ctx, texts, k)
	if err != nil {
		return Report{}, fmt.Errorf("rank %s/%s: %w", d.Name, split, err)
	}
	return EvaluateSplit(d, split, rankings, ks)
}
