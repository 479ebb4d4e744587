package metrics

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseMetric returns the per-query value, in [0, 1], of a metric named as Result.Map names
// it: "recall@K", "ndcg@K" or "comp@K" with K > 0. It is what a grid search or a weight
// search maximises on dev queries (rerank.Search, fusion.Choose).
func ParseMetric(name string) (func(ranked, relevant []int) float64, error) {
	kind, ks, ok := strings.Cut(name, "@")
	k, err := strconv.Atoi(ks)
	if !ok || err != nil || k <= 0 {
		return nil, fmt.Errorf("metric %q: want recall@K, ndcg@K or comp@K", name)
	}
	switch kind {
	case "recall", "ndcg", "comp":
	default:
		return nil, fmt.Errorf("metric %q: want recall@K, ndcg@K or comp@K", name)
	}
	return func(ranked, relevant []int) float64 {
		r, n, c := Query(ranked, relevant, k)
		switch kind {
		case "recall":
			return r
		case "ndcg":
			return n
		}
		return c
	}, nil
}
