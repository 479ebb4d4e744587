package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/toolret/toolret/rank"
)

// PerQuery returns each metric ("recall@3", "ndcg@5", "comp@5", ... as Result.Map names
// them) of every query with relevant tools, in percent: rankings[i] ranks the query whose
// relevant tools are relevant[i]; queries without relevant tools are left out, as Evaluate
// leaves them out of its averages.
func PerQuery(rankings []rank.Ranking, relevant [][]int, ks []int) map[string][]float64 {
	if len(ks) == 0 {
		ks = DefaultKs
	}
	out := map[string][]float64{}
	for i, rel := range relevant {
		if len(rel) == 0 {
			continue
		}
		var ranked []int
		if i < len(rankings) {
			ranked = rankings[i].Tools
		}
		for _, k := range ks {
			rc, nd, cp := Query(ranked, rel, k)
			out[fmt.Sprintf("recall@%d", k)] = append(out[fmt.Sprintf("recall@%d", k)], 100*rc)
			out[fmt.Sprintf("ndcg@%d", k)] = append(out[fmt.Sprintf("ndcg@%d", k)], 100*nd)
			out[fmt.Sprintf("comp@%d", k)] = append(out[fmt.Sprintf("comp@%d", k)], 100*cp)
		}
	}
	return out
}

// Paired is the comparison of two systems' per-query values of one metric over the same
// queries: their means, the mean difference B − A with its 95% paired-bootstrap interval, and
// the two-sided p-value of a paired randomization (sign-flip) test of "no difference".
type Paired struct {
	N          int
	A, B, Diff float64
	Low, High  float64 // 95% bootstrap interval of Diff
	P          float64
}

// Significant reports whether the difference is significant at level alpha (P < alpha).
func (p Paired) Significant(alpha float64) bool { return p.P < alpha }

// Compare compares b with a (per-query values of the same queries, in the same order) with
// samples bootstrap resamples and as many random sign flips, seeded by seed so that a report
// is reproducible. The p-value counts the observed statistic itself ((hits+1)/(samples+1)),
// so it is never 0.
func Compare(a, b []float64, samples int, seed uint64) (Paired, error) {
	switch {
	case len(a) != len(b):
		return Paired{}, fmt.Errorf("compare: %d values against %d: the two systems must be scored on the same queries", len(a), len(b))
	case len(a) == 0:
		return Paired{}, fmt.Errorf("compare: no queries")
	case samples < 1:
		return Paired{}, fmt.Errorf("compare: %d samples, want >= 1", samples)
	}
	n := len(a)
	d := make([]float64, n)
	p := Paired{N: n}
	for i := range a {
		if math.IsNaN(a[i]) || math.IsNaN(b[i]) {
			return Paired{}, fmt.Errorf("compare: query %d has a NaN value", i)
		}
		d[i] = b[i] - a[i]
		p.A += a[i]
		p.B += b[i]
		p.Diff += d[i]
	}
	p.A /= float64(n)
	p.B /= float64(n)
	p.Diff /= float64(n)
	r := rand.New(rand.NewPCG(seed, 0x70015e7))
	boot := make([]float64, samples)
	for s := range boot {
		sum := 0.0
		for range n {
			sum += d[r.IntN(n)]
		}
		boot[s] = sum / float64(n)
	}
	slices.Sort(boot)
	p.Low, p.High = quantile(boot, 0.025), quantile(boot, 0.975)
	obs := math.Abs(p.Diff) - 1e-12 // ties count as at least as extreme
	hits := 0
	for range samples {
		sum := 0.0
		for _, x := range d {
			if r.Uint64()&1 == 1 {
				sum -= x
			} else {
				sum += x
			}
		}
		if math.Abs(sum/float64(n)) >= obs {
			hits++
		}
	}
	p.P = float64(hits+1) / float64(samples+1)
	return p, nil
}

// quantile returns the q-quantile of sorted values (linear interpolation).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	x := q * float64(len(sorted)-1)
	i := int(x)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	f := x - float64(i)
	return sorted[i]*(1-f) + sorted[i+1]*f
}

// Comparison is one metric's row of CompareAll: the means of A and B, B − A with its 95%
// paired-bootstrap interval, and the randomization test's p-value.
type Comparison struct {
	Metric string  `json:"metric"`
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	Diff   float64 `json:"diff"`
	Low    float64 `json:"ci_low"`
	High   float64 `json:"ci_high"`
	P      float64 `json:"p"`
}

// CompareAll compares every metric (recall, ndcg and comp at each cutoff of ks; none:
// DefaultKs) of b with a's, as PerQuery returns them for the same queries, with Compare.
func CompareAll(a, b map[string][]float64, ks []int, samples int, seed uint64) ([]Comparison, error) {
	if len(ks) == 0 {
		ks = DefaultKs
	}
	var rows []Comparison
	for _, kind := range []string{"recall", "ndcg", "comp"} {
		for _, k := range ks {
			name := fmt.Sprintf("%s@%d", kind, k)
			p, err := Compare(a[name], b[name], samples, seed)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			rows = append(rows, Comparison{Metric: name, A: p.A, B: p.B, Diff: p.Diff, Low: p.Low, High: p.High, P: p.P})
		}
	}
	return rows, nil
}
