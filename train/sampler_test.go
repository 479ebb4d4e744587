package train

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestNoDuplicateBatches(t *testing.T) {
	for trial := 0; trial < 50; trial++ {
		r := rand.New(rand.NewPCG(uint64(trial), 1))
		nq, nt := 5+r.IntN(40), 2+r.IntN(15)
		var pairs []Pair
		for q := 0; q < nq; q++ {
			for k := 0; k < 1+r.IntN(4); k++ {
				pairs = append(pairs, Pair{q, r.IntN(nt)})
			}
		}
		size := 1 + r.IntN(8)
		batches := NoDuplicateBatches(pairs, size, 3, trial)
		seen := map[Pair]int{}
		for bi, b := range batches {
			if len(b) == 0 || len(b) > size {
				t.Fatalf("trial %d: batch %d has %d examples (size %d)", trial, bi, len(b), size)
			}
			qs, ts := map[int]bool{}, map[int]bool{}
			for _, p := range b {
				if qs[p.Query] || ts[p.Tool] {
					t.Fatalf("trial %d: batch %d repeats a query or tool: %v", trial, bi, b)
				}
				qs[p.Query], ts[p.Tool] = true, true
				seen[p]++
			}
		}
		want := map[Pair]int{}
		for _, p := range pairs {
			want[p]++
		}
		if !reflect.DeepEqual(seen, want) {
			t.Fatalf("trial %d: pairs visited %v, want each once %v", trial, seen, want)
		}
		if again := NoDuplicateBatches(pairs, size, 3, trial); !reflect.DeepEqual(again, batches) {
			t.Fatalf("trial %d: not deterministic", trial)
		}
	}
	a := NoDuplicateBatches([]Pair{{0, 0}, {1, 1}, {2, 2}, {3, 3}}, 2, 1, 0)
	b := NoDuplicateBatches([]Pair{{0, 0}, {1, 1}, {2, 2}, {3, 3}}, 2, 1, 1)
	if reflect.DeepEqual(a, b) {
		t.Log("epochs 0 and 1 gave the same order (possible but unlikely)")
	}
}
