package metrics

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/toolret/toolret/rank"
)

// l2 is 1/log2(rank+1) for 1-based rank.
func l2(rank int) float64 { return 1 / math.Log2(float64(rank)+1) }

func TestQuery(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		ranked, relevant         []int
		k                        int
		recall, ndcg, completion float64
	}{
		// Relevant {7}: found at rank 2. R@3 = 1/1; DCG = 1/log2(3); IDCG = 1 (min(1,3)=1 hit).
		{"single relevant rank 2", []int{3, 7, 9}, []int{7}, 3, 1, l2(2), 1},
		// K < |relevant|: relevant {1,2,3}, top-2 = [1,2]. Recall = 2/3 (not capped by K);
		// DCG = 1 + 1/log2(3); IDCG over min(3,2)=2 hits = same, so NDCG = 1; not complete.
		{"K smaller than relevant", []int{1, 2, 3}, []int{1, 2, 3}, 2, 2.0 / 3, 1, 0},
		// Relevant {5,6}, ranking [5,0,6]: R@3 = 1; DCG = 1 + 1/log2(4) = 1.5;
		// IDCG = 1 + 1/log2(3); complete.
		{"two relevant with gap", []int{5, 0, 6}, []int{5, 6}, 3, 1, 1.5 / (1 + l2(2)), 1},
		// Nothing relevant retrieved.
		{"miss", []int{0, 1}, []int{9}, 2, 0, 0, 0},
		// Duplicates count once: [4,4,8] with relevant {4,8}: hits 4 at rank 1 and 8 at rank 3.
		// DCG = 1 + 1/log2(4) = 1.5; IDCG = 1 + 1/log2(3).
		{"duplicate in ranking", []int{4, 4, 8}, []int{4, 8}, 3, 1, 1.5 / (1 + l2(2)), 1},
		// Empty ranking.
		{"empty ranking", nil, []int{1}, 5, 0, 0, 0},
		// Ranking shorter than K.
		{"short ranking", []int{2}, []int{2, 3}, 5, 0.5, 1 / (1 + l2(2)), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, n, c := Query(tc.ranked, tc.relevant, tc.k)
			if math.Abs(r-tc.recall) > 1e-12 || math.Abs(n-tc.ndcg) > 1e-12 || c != tc.completion {
				t.Fatalf("Query = (%v, %v, %v), want (%v, %v, %v)", r, n, c, tc.recall, tc.ndcg, tc.completion)
			}
		})
	}
}

func TestEvaluateSkipsUnjudgedAndAverages(t *testing.T) {
	rankings := []rank.Ranking{
		{Tools: []int{1, 2, 3}}, // relevant {1}: R@1 = 1, C@1 = 1
		{Tools: []int{1, 2, 3}}, // no relevant tools: skipped
		{Tools: []int{3, 1, 2}}, // relevant {1,2}: R@1 = 0, R@3 = 1
	}
	rel := [][]int{{1}, nil, {1, 2}}
	r := Evaluate(rankings, rel, []int{1, 3})
	if r.N != 2 || r.Skipped != 1 {
		t.Fatalf("N=%d skipped=%d, want 2 and 1", r.N, r.Skipped)
	}
	// R@1 = (1 + 0)/2 = 50%; R@3 = (1 + 1)/2 = 100%; C@1 = 50%.
	// NDCG@3 of the third query: DCG = 1/log2(3) + 1/log2(4); IDCG = 1 + 1/log2(3).
	n3 := (l2(2) + l2(3)) / (1 + l2(2))
	want := map[string]float64{"recall@1": 50, "recall@3": 100, "comp@1": 50, "comp@3": 100, "ndcg@1": 50, "ndcg@3": 100 * (1 + n3) / 2}
	got := r.Map()
	for k, v := range want {
		if math.Abs(got[k]-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	b, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(b), `"recall@3":100`) {
		t.Fatalf("json %s, %v", b, err)
	}
}

func TestEvaluateTiesUseTopK(t *testing.T) {
	// Tools 0 and 2 tie; TopK breaks ties by lower index, so top-1 is tool 0.
	rk := rank.TopK([]float32{0.5, 0.1, 0.5}, 1)
	r := Evaluate([]rank.Ranking{rk}, [][]int{{2}}, []int{1})
	if r.Recall[1] != 0 {
		t.Fatalf("R@1 = %v, want 0 (tie goes to tool 0)", r.Recall[1])
	}
}

func TestEvaluateNoJudgedQueries(t *testing.T) {
	r := Evaluate([]rank.Ranking{{Tools: []int{1}}}, [][]int{nil}, nil)
	if r.N != 0 || r.Recall[5] != 0 || len(r.Ks) != len(DefaultKs) {
		t.Fatalf("got %+v", r)
	}
}
