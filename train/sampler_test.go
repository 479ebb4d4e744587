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
		batches := NoDuplicateBatches(pairs, size, 3, trial, false)
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
		if again := NoDuplicateBatches(pairs, size, 3, trial, false); !reflect.DeepEqual(again, batches) {
			t.Fatalf("trial %d: not deterministic", trial)
		}
	}
}

func TestNoDuplicateBatchesFill(t *testing.T) {
	// One tool in most pairs: strict batching needs one batch per such pair; fill keeps
	// batches full and still visits every pair once.
	var pairs []Pair
	for q := 0; q < 100; q++ {
		pairs = append(pairs, Pair{q, 0})
		if q%4 == 0 {
			pairs = append(pairs, Pair{q, 1 + q})
		}
	}
	strict := NoDuplicateBatches(pairs, 8, 1, 0, false)
	filled := NoDuplicateBatches(pairs, 8, 1, 0, true)
	if len(strict) < 100 {
		t.Fatalf("strict: %d batches, want >= 100 (tool 0 is in 100 pairs)", len(strict))
	}
	if len(filled) != (len(pairs)+7)/8 {
		t.Fatalf("fill: %d batches for %d pairs of 8", len(filled), len(pairs))
	}
	seen := map[Pair]int{}
	for i, b := range filled {
		if i < len(filled)-1 && len(b) != 8 {
			t.Fatalf("fill: batch %d has %d examples", i, len(b))
		}
		for _, p := range b {
			seen[p]++
		}
	}
	for _, p := range pairs {
		if seen[p] != 1 {
			t.Fatalf("pair %v visited %d times", p, seen[p])
		}
	}
}
