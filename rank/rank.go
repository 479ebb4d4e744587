// Package rank defines how retrieval methods plug into evaluation and serving: a Ranker
// scores every tool for a query and returns the best ones.
package rank

import (
	"context"
	"sort"
)

// Ranking is one query's result: tool indices best first, with their scores.
type Ranking struct {
	Tools  []int
	Scores []float32
}

// Ranker scores all tools for each query and returns, per query, the top k tool indices best
// first with their scores (k <= 0 means all tools).
type Ranker interface {
	Rank(ctx context.Context, queries []string, k int) ([]Ranking, error)
}

// TopK returns the k best entries of scores, best first; ties go to the lower index so results
// are deterministic. k <= 0 or k > len(scores) returns all of them, sorted.
func TopK(scores []float32, k int) Ranking {
	n := len(scores)
	if k <= 0 || k > n {
		k = n
	}
	better := func(a, b int) bool {
		if scores[a] != scores[b] {
			return scores[a] > scores[b]
		}
		return a < b
	}
	// A bounded min-heap of the k best keeps this O(n log k) for large tool libraries.
	heap := make([]int, 0, k)
	down := func(i int) {
		for {
			l, m := 2*i+1, i
			if l < len(heap) && better(heap[m], heap[l]) {
				m = l
			}
			if r := l + 1; r < len(heap) && better(heap[m], heap[r]) {
				m = r
			}
			if m == i {
				return
			}
			heap[i], heap[m] = heap[m], heap[i]
			i = m
		}
	}
	for i := 0; i < n; i++ {
		if len(heap) < k {
			heap = append(heap, i)
			for j := len(heap) - 1; j > 0; {
				p := (j - 1) / 2
				if !better(heap[p], heap[j]) {
					break
				}
				heap[p], heap[j] = heap[j], heap[p]
				j = p
			}
			continue
		}
		if better(i, heap[0]) {
			heap[0] = i
			down(0)
		}
	}
	sort.Slice(heap, func(a, b int) bool { return better(heap[a], heap[b]) })
	r := Ranking{Tools: heap, Scores: make([]float32, len(heap))}
	for i, t := range heap {
		r.Scores[i] = scores[t]
	}
	return r
}
