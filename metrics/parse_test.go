package metrics

import (
	"math"
	"strings"
	"testing"
)

func TestParseMetric(t *testing.T) {
	// Relevant 1 and 2; ranked 1, 3, 2: recall@2 1/2, COMP@2 0, COMP@3 1,
	// NDCG@2 1 / (1 + 1/log2(3)).
	ranked, rel := []int{1, 3, 2}, []int{1, 2}
	for _, c := range []struct {
		name string
		want float64
	}{
		{"recall@2", 0.5},
		{"comp@2", 0},
		{"comp@3", 1},
		{"ndcg@2", 1 / (1 + 1/math.Log2(3))},
		{"recall@1", 0.5},
	} {
		f, err := ParseMetric(c.name)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := f(ranked, rel); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
	for _, bad := range []string{"mrr", "mrr@5", "ndcg@0", "ndcg@x", "recall", "@5"} {
		if _, err := ParseMetric(bad); err == nil || !strings.Contains(err.Error(), "want recall@K") {
			t.Errorf("ParseMetric(%q): err = %v", bad, err)
		}
	}
}
