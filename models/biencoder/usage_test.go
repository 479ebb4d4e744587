package biencoder

import (
	"math"
	"strings"
	"testing"
)

func TestUsageVectors(t *testing.T) {
	// Query 0 = (3, 4) (normalised (0.6, 0.8)) uses tool 0; query 1 = (1, 0) uses tools 0 and
	// 1; tool 2 has no training query and keeps its fallback (9, 9).
	q := [][]float32{{3, 4}, {1, 0}}
	fb := [][]float32{{-1, -1}, {-2, -2}, {9, 9}}
	inv := 1 / math.Sqrt(0.8) // tool 0's cosine mean (0.8, 0.4) has norm sqrt(0.8)
	for _, tc := range []struct {
		name      string
		q         [][]float32
		rel       [][]int
		normalize bool
		want      [][]float64
		fallbacks int
	}{
		{"cosine", q, [][]int{{0}, {0, 1}}, true, [][]float64{{0.8 * inv, 0.4 * inv}, {1, 0}, {9, 9}}, 1},
		// Dot: the plain mean of the raw embeddings, not re-normalised.
		{"dot", q, [][]int{{0}, {0, 1}}, false, [][]float64{{2, 2}, {1, 0}, {9, 9}}, 1},
		// A tool listed twice by one query counts once: still the mean of (3,4) and (1,0).
		{"duplicate", q, [][]int{{0, 0}, {0}}, false, [][]float64{{2, 2}, {-2, -2}, {9, 9}}, 2},
		// A single query: its normalised embedding.
		{"one query", [][]float32{{0, 5}}, [][]int{{2}}, true, [][]float64{{-1, -1}, {-2, -2}, {0, 1}}, 2},
		{"no query", nil, nil, true, [][]float64{{-1, -1}, {-2, -2}, {9, 9}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := UsageVectors(tc.q, tc.rel, fb, tc.normalize)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.fallbacks {
				t.Errorf("fallbacks %d, want %d", n, tc.fallbacks)
			}
			for i, w := range tc.want {
				for k := range w {
					if math.Abs(float64(got[i][k])-w[k]) > 1e-6 {
						t.Fatalf("tool %d: %v, want %v", i, got[i], w)
					}
				}
			}
		})
	}
	for _, tc := range []struct {
		name string
		q    [][]float32
		rel  [][]int
		fb   [][]float32
		want string
	}{
		{"tool out of range", q, [][]int{{0}, {3}}, fb, "query 1 uses tool 3, have 3 tools"},
		{"negative tool", q, [][]int{{-1}, {0}}, fb, "uses tool -1"},
		{"lists", q, [][]int{{0}}, fb, "2 query embeddings for 1 relevance lists"},
		{"query dim", [][]float32{{1, 2, 3}}, [][]int{{0}}, fb, "query 0 embedding has 3 dimensions, tools 2"},
		{"fallback dim", q, [][]int{{0}, {1}}, [][]float32{{1, 1}, {1}}, "tool 1 has 1 dimensions"},
		{"no tools", q, [][]int{{0}, {1}}, nil, "no tools"},
	} {
		if _, _, err := UsageVectors(tc.q, tc.rel, tc.fb, true); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if got := UsageNote(3, 464); got != "usage vectors: 3 of 464 tools have no training query; they keep their text vector" {
		t.Errorf("UsageNote: %q", got)
	}
}
