package rank

import (
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

func TestTopK(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scores []float32
		k      int
		want   []int
	}{
		{"basic", []float32{0.1, 0.9, 0.5}, 2, []int{1, 2}},
		{"ties go to lower index", []float32{0.5, 0.7, 0.5, 0.7}, 3, []int{1, 3, 0}},
		{"k larger than n", []float32{1, 2}, 5, []int{1, 0}},
		{"k zero means all", []float32{3, 1, 2}, 0, []int{0, 2, 1}},
		{"empty", nil, 3, []int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TopK(tc.scores, tc.k)
			if !reflect.DeepEqual(got.Tools, tc.want) {
				t.Fatalf("TopK = %v, want %v", got.Tools, tc.want)
			}
			for i, tool := range got.Tools {
				if got.Scores[i] != tc.scores[tool] {
					t.Fatalf("score %d = %v, want %v", i, got.Scores[i], tc.scores[tool])
				}
			}
		})
	}
}

func TestTopKMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := 1 + r.IntN(60)
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.IntN(8)) // many ties
		}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return s[idx[a]] > s[idx[b]] })
		k := r.IntN(n + 2)
		want := idx
		if k > 0 && k < n {
			want = idx[:k]
		}
		if got := TopK(s, k).Tools; !reflect.DeepEqual(got, want) {
			t.Fatalf("n=%d k=%d: got %v want %v", n, k, got, want)
		}
	}
}
