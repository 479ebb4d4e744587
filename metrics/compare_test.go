package metrics

import (
	"math"
	"strings"
	"testing"

	"github.com/toolret/toolret/rank"
)

func TestCompare(t *testing.T) {
	const n = 400
	same := make([]float64, n)
	shifted := make([]float64, n)
	noisyA := make([]float64, n)
	noisyB := make([]float64, n)
	for i := range same {
		same[i] = float64(i % 7)
		shifted[i] = same[i] + 1
		// B wins half the queries by 1 and loses the other half by 1: no difference.
		noisyA[i] = 50
		noisyB[i] = 50 + float64(1-2*(i%2))
	}
	for _, c := range []struct {
		name       string
		a, b       []float64
		diff       float64
		low, high  float64 // the interval must lie within [low, high] and contain diff
		pMin, pMax float64
	}{
		{"identical", same, same, 0, 0, 0, 1, 1},
		{"shift by one", same, shifted, 1, 1, 1, 0, 0.001},
		{"balanced wins and losses", noisyA, noisyB, 0, -0.2, 0.2, 0.5, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Compare(c.a, c.b, 2000, 1)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(p.Diff-c.diff) > 1e-9 || p.N != n {
				t.Fatalf("diff %v over %d queries, want %v over %d", p.Diff, p.N, c.diff, n)
			}
			if p.Low < c.low-1e-9 || p.High > c.high+1e-9 || p.Low > p.Diff+1e-9 || p.High < p.Diff-1e-9 {
				t.Errorf("interval [%v, %v], want within [%v, %v] around %v", p.Low, p.High, c.low, c.high, p.Diff)
			}
			if p.P < c.pMin || p.P > c.pMax {
				t.Errorf("p %v, want in [%v, %v]", p.P, c.pMin, c.pMax)
			}
			again, _ := Compare(c.a, c.b, 2000, 1)
			if again != p {
				t.Errorf("not reproducible: %+v then %+v", p, again)
			}
		})
	}
	for _, c := range []struct {
		name    string
		a, b    []float64
		samples int
		err     string
	}{
		{"lengths", []float64{1, 2}, []float64{1}, 10, "same queries"},
		{"empty", nil, nil, 10, "no queries"},
		{"samples", []float64{1}, []float64{1}, 0, "samples"},
		{"nan", []float64{1, math.NaN()}, []float64{1, 2}, 10, "query 1"},
	} {
		if _, err := Compare(c.a, c.b, c.samples, 1); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.err)
		}
	}
}

// TestPerQueryMeansEqualEvaluate: the per-query values average to Evaluate's figures.
func TestPerQueryMeansEqualEvaluate(t *testing.T) {
	rankings := []rank.Ranking{{Tools: []int{1, 2, 3}}, {Tools: []int{4, 0, 1}}, {Tools: []int{2}}, {Tools: []int{5, 6}}}
	relevant := [][]int{{2, 3}, {0}, nil, {7, 5, 9}}
	ks := []int{1, 3}
	per := PerQuery(rankings, relevant, ks)
	ev := Evaluate(rankings, relevant, ks).Map()
	if len(per) != 6 {
		t.Fatalf("%d metrics, want 6", len(per))
	}
	for name, v := range per {
		if len(v) != 3 {
			t.Fatalf("%s: %d queries, want 3 (the one without relevant tools left out)", name, len(v))
		}
		mean := (v[0] + v[1] + v[2]) / 3
		if math.Abs(mean-ev[name]) > 1e-9 {
			t.Errorf("%s: per-query mean %v, Evaluate %v", name, mean, ev[name])
		}
	}
}

// TestCompareAll: one row per metric and cutoff, in order, each Compare's; B one query
// better at recall@1 only.
func TestCompareAll(t *testing.T) {
	rel := [][]int{{0}, {1}, {2}, {3}}
	a := []rank.Ranking{{Tools: []int{0, 1}}, {Tools: []int{0, 1}}, {Tools: []int{2, 0}}, {Tools: []int{0, 3}}}
	b := []rank.Ranking{{Tools: []int{0, 1}}, {Tools: []int{1, 0}}, {Tools: []int{2, 0}}, {Tools: []int{0, 3}}}
	ks := []int{1, 2}
	rows, err := CompareAll(PerQuery(a, rel, ks), PerQuery(b, rel, ks), ks, 200, 1)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Metric)
	}
	if got, want := strings.Join(names, ","), "recall@1,recall@2,ndcg@1,ndcg@2,comp@1,comp@2"; got != want {
		t.Fatalf("metrics %s, want %s", got, want)
	}
	if r := rows[0]; r.A != 50 || r.B != 75 || r.Diff != 25 {
		t.Errorf("recall@1: A %v B %v diff %v, want 50 75 25", r.A, r.B, r.Diff)
	}
	if r := rows[1]; r.Diff != 0 || r.P != 1 {
		t.Errorf("recall@2: diff %v p %v, want 0 and 1", r.Diff, r.P)
	}
	if _, err := CompareAll(PerQuery(a, rel, ks), map[string][]float64{}, ks, 200, 1); err == nil || !strings.HasPrefix(err.Error(), "recall@1: ") {
		t.Errorf("B without values: err = %v", err)
	}
}
