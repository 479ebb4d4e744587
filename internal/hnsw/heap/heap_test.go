package heap

import (
	"slices"
	"testing"
)

type num int

func (a num) Less(b num) bool { return a < b }

// TestMaxPopLast checks the fix of v0.6.1's Max and PopLast, which returned the last array
// element of the min-heap instead of its largest.
func TestMaxPopLast(t *testing.T) {
	for _, in := range [][]num{{1}, {2, 1}, {5, 1, 4, 2, 3}, {1, 9, 2, 3, 4, 5, 6, 7}, {7, 7, 1, 7}} {
		var h Heap[num]
		h.Init(nil)
		for _, x := range in {
			h.Push(x)
		}
		want := slices.Sorted(slices.Values(in))
		for len(want) > 0 {
			if h.Min() != want[0] || h.Max() != want[len(want)-1] {
				t.Fatalf("%v: Min %v Max %v, want %v %v", in, h.Min(), h.Max(), want[0], want[len(want)-1])
			}
			if got := h.PopLast(); got != want[len(want)-1] {
				t.Fatalf("%v: PopLast %v, want %v", in, got, want[len(want)-1])
			}
			want = want[:len(want)-1]
		}
	}
}
