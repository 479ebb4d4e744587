package crossencoder

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/train"
)

// twoLibraries is a multi-source dataset of two libraries: tools 0-9 (weight w0) and 10-19,
// every query relevant to one tool of its library, n0 queries in library 0 and n1 in 1.
func twoLibraries(n0, n1 int, w0 float64) *Task {
	d := &data.Dataset{Tools: make([]data.Tool, 20), ToolLibrary: make([]int, 20)}
	var lib [2][]int
	for i := range 20 {
		d.ToolLibrary[i] = i / 10
		lib[i/10] = append(lib[i/10], i)
	}
	d.Libraries = []data.Library{{Name: "a", Weight: w0, Tools: lib[0]}, {Name: "b", Weight: 1 - w0, Tools: lib[1]}}
	s := &data.Split{Name: "train", Relevant: map[int][]int{}}
	var pairs []train.Pair
	for q := range n0 + n1 {
		tool := q % 10
		if q >= n0 {
			tool += 10
		}
		d.Queries = append(d.Queries, data.Query{ID: string(rune('A' + q%26))})
		s.Queries = append(s.Queries, q)
		s.Relevant[q] = []int{tool}
		pairs = append(pairs, train.Pair{Query: q, Tool: tool})
	}
	t := &Task{pairs: pairs, order: map[int][][]train.Pair{}}
	t.Data, t.Train, t.BatchSize, t.Seed = d, s, 4, 7
	return t
}

// TestLibraryBatches: on a multi-source dataset every batch holds one library's pairs, the
// libraries' shares of the batches follow their weights (not their sizes), every batch is
// full, and an epoch's batches are a pure function of (seed, epoch): a resumed run (a new
// Task) sees the same ones. It fails on the single shuffled pass, which mixes libraries.
func TestLibraryBatches(t *testing.T) {
	for _, c := range []struct {
		name   string
		n0, n1 int
		w0     float64
	}{
		{"equal weights, unequal sizes", 40, 8, 0.5},
		{"weighted to the small library", 40, 8, 0.25},
		{"weighted to the large library", 16, 32, 0.75},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := twoLibraries(c.n0, c.n1, c.w0)
			n := tk.Batches(0)
			count := [2]int{}
			for i := range n {
				b := tk.batches(0)[i]
				if len(b) != tk.BatchSize {
					t.Fatalf("batch %d has %d pairs, want %d", i, len(b), tk.BatchSize)
				}
				l := tk.Data.LibraryOf(b[0].Tool)
				for _, p := range b {
					if tk.Data.LibraryOf(p.Tool) != l {
						t.Fatalf("batch %d mixes libraries: %v", i, b)
					}
				}
				count[l]++
			}
			if got, want := float64(count[0])/float64(n), c.w0; got < want-1.0/float64(n) || got > want+1.0/float64(n) {
				t.Errorf("library a has %d of %d batches (%.2f), want a share of %.2f", count[0], n, got, want)
			}
			again := twoLibraries(c.n0, c.n1, c.w0)
			for e := range 3 {
				if !reflect.DeepEqual(tk.batches(e), again.batches(e)) {
					t.Errorf("epoch %d: the batches differ between two tasks of the same seed", e)
				}
			}
			if reflect.DeepEqual(tk.batches(0), tk.batches(1)) {
				t.Error("epochs 0 and 1 have the same batches")
			}
		})
	}
	one := twoLibraries(10, 0, 0.5)
	one.Data.Libraries, one.Data.ToolLibrary = nil, nil
	if got := one.Batches(0); got != 2 { // 10 pairs in batches of 4: the partial one dropped
		t.Errorf("one library: %d batches, want 2", got)
	}
}

// TestSampleNegativesIn: negatives stay in the query's library, both those taken from the
// candidates (a candidate of another library is skipped) and the uniform draws.
func TestSampleNegativesIn(t *testing.T) {
	lib := []int{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}
	pos := func(a int) bool { return a == 12 }
	for _, c := range []struct {
		name  string
		cands []int
		k     int
	}{
		{"candidates of both libraries", []int{3, 12, 11, 4, 15}, 3},
		{"no candidates: uniform draws", nil, 5},
		{"more than the library's non-positives", []int{0, 1}, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			for seed := range uint64(20) {
				got, err := SampleNegativesIn(rand.New(rand.NewPCG(seed, 1)), c.cands, pos, lib, 20, c.k)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != c.k {
					t.Fatalf("%d negatives, want %d", len(got), c.k)
				}
				for _, a := range got {
					if _, ok := slices.BinarySearch(lib, a); !ok || pos(a) {
						t.Fatalf("seed %d: negative %d is outside the library or positive: %v", seed, a, got)
					}
				}
			}
		})
	}
	if _, err := SampleNegativesIn(rand.New(rand.NewPCG(1, 1)), nil, func(int) bool { return true }, lib, 20, 2); err == nil {
		t.Error("a query relevant to its whole library: no error")
	}
}

func TestDevSample(t *testing.T) {
	qs := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, c := range []struct {
		n      int
		spread bool
		want   []int
	}{
		{3, false, []int{0, 1, 2}},
		{3, true, []int{0, 3, 6}},
		{5, true, []int{0, 2, 4, 6, 8}},
		{0, true, qs},
		{20, true, qs},
	} {
		if got := DevSample(qs, c.n, c.spread); !reflect.DeepEqual(got, c.want) {
			t.Errorf("DevSample(%d, %v) = %v, want %v", c.n, c.spread, got, c.want)
		}
	}
}
