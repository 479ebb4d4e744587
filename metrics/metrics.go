// Package metrics computes tool-retrieval metrics exactly as the COLT evaluation does, ranking
// over all tools:
//
//	Recall@K = |relevant ∩ top K| / |relevant|                 (not capped by K)
//	NDCG@K   = DCG@K / IDCG@K, binary gains 1/log2(rank+1), IDCG over min(|relevant|, K) hits
//	COMP@K   = 1 if every relevant tool is in the top K, else 0
//
// Each is averaged over the queries with at least one relevant tool and reported in percent.
package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/rank"
)

// DefaultKs are the cut-offs reported unless asked otherwise.
var DefaultKs = []int{1, 3, 5, 10}

// DevKs are the cutoffs of every dev evaluation during training (train.Task.Evaluate): the
// dev metrics a run selects its best checkpoint by (-metric) are computed at them.
var DevKs = DefaultKs

// Result holds averaged metrics (percent) for one set of queries.
type Result struct {
	Ks      []int
	Recall  map[int]float64
	NDCG    map[int]float64
	Comp    map[int]float64
	N       int // queries evaluated (with >= 1 relevant tool)
	Skipped int // queries without relevant tools, excluded from the averages
}

// Query returns recall, ndcg and comp (fractions in [0,1]) of one ranking at cut-off k.
// Duplicate tools in a ranking count once, at their best position.
func Query(ranked []int, relevant []int, k int) (recall, ndcg, comp float64) {
	if len(relevant) == 0 {
		return 0, 0, 0
	}
	rel := make(map[int]bool, len(relevant))
	for _, t := range relevant {
		rel[t] = true
	}
	seen := map[int]bool{}
	hits, dcg := 0, 0.0
	for i, t := range ranked {
		if i >= k {
			break
		}
		if seen[t] {
			continue
		}
		seen[t] = true
		if rel[t] {
			hits++
			dcg += 1 / math.Log2(float64(i)+2)
		}
	}
	ideal := 0.0
	for i := 0; i < min(len(rel), k); i++ {
		ideal += 1 / math.Log2(float64(i)+2)
	}
	recall = float64(hits) / float64(len(rel))
	if ideal > 0 {
		ndcg = dcg / ideal
	}
	if hits == len(rel) {
		comp = 1
	}
	return recall, ndcg, comp
}

// Evaluate averages the metrics over queries; rankings[i] is the ranking of the query whose
// relevant tools are relevant[i].
func Evaluate(rankings []rank.Ranking, relevant [][]int, ks []int) Result {
	if len(ks) == 0 {
		ks = DefaultKs
	}
	r := Result{Ks: append([]int(nil), ks...), Recall: map[int]float64{}, NDCG: map[int]float64{}, Comp: map[int]float64{}}
	for i, rel := range relevant {
		if len(rel) == 0 {
			r.Skipped++
			continue
		}
		r.N++
		var ranked []int
		if i < len(rankings) {
			ranked = rankings[i].Tools
		}
		for _, k := range ks {
			rc, nd, cp := Query(ranked, rel, k)
			r.Recall[k] += rc
			r.NDCG[k] += nd
			r.Comp[k] += cp
		}
	}
	if r.N > 0 {
		for _, k := range ks {
			r.Recall[k] *= 100 / float64(r.N)
			r.NDCG[k] *= 100 / float64(r.N)
			r.Comp[k] *= 100 / float64(r.N)
		}
	}
	return r
}

// Map returns the metrics keyed "recall@3", "ndcg@5", "comp@3", ... (percent).
func (r Result) Map() map[string]float64 {
	m := map[string]float64{}
	for _, k := range r.Ks {
		m[fmt.Sprintf("recall@%d", k)] = r.Recall[k]
		m[fmt.Sprintf("ndcg@%d", k)] = r.NDCG[k]
		m[fmt.Sprintf("comp@%d", k)] = r.Comp[k]
	}
	return m
}

// MarshalJSON writes the flat map plus the query counts.
func (r Result) MarshalJSON() ([]byte, error) {
	m := map[string]any{"queries": r.N}
	if r.Skipped > 0 {
		m["skipped"] = r.Skipped
	}
	for k, v := range r.Map() {
		m[k] = round2(v)
	}
	return json.Marshal(m)
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// Table formats results as a readable table, one row per named result.
func Table(names []string, results []Result) string {
	if len(results) == 0 {
		return ""
	}
	ks := results[0].Ks
	var b strings.Builder
	w := 8
	for _, n := range names {
		w = max(w, len(n))
	}
	fmt.Fprintf(&b, "%-*s %7s", w, "", "queries")
	for _, m := range []string{"R", "N", "C"} {
		for _, k := range ks {
			fmt.Fprintf(&b, " %7s", fmt.Sprintf("%s@%d", m, k))
		}
	}
	b.WriteByte('\n')
	for i, r := range results {
		fmt.Fprintf(&b, "%-*s %7d", w, names[i], r.N)
		for _, mp := range []map[int]float64{r.Recall, r.NDCG, r.Comp} {
			for _, k := range ks {
				fmt.Fprintf(&b, " %7.2f", mp[k])
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// sortedKeys returns the keys of m in sorted order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CheckDevMetric reports an error unless name is a metric every dev evaluation computes:
// recall@K, ndcg@K or comp@K with K in DevKs (the setting "metric" that selects the best
// checkpoint).
func CheckDevMetric(name string) error {
	var valid []string
	for _, m := range []string{"recall", "ndcg", "comp"} {
		for _, k := range DevKs {
			n := fmt.Sprintf("%s@%d", m, k)
			if n == name {
				return nil
			}
			valid = append(valid, n)
		}
	}
	return check.Quoted("metric", name, "want one of "+strings.Join(valid, ", "))
}
