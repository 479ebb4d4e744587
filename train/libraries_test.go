package train

import (
	"reflect"
	"testing"
)

func TestLibraryBatches(t *testing.T) {
	// Three libraries: 100, 40 and 7 pairs (the last smaller than a batch), tools unique
	// per library (library l's tools are l*1000+...).
	sizes := []int{100, 40, 7}
	groups := make([][]Pair, len(sizes))
	libOf := map[int]int{}
	for l, n := range sizes {
		for i := range n {
			p := Pair{Query: l*1000 + i, Tool: l*1000 + i%5}
			groups[l] = append(groups[l], p)
			libOf[p.Tool] = l
		}
	}
	for _, c := range []struct {
		name    string
		weights []float64
	}{
		{"proportional", []float64{100, 40, 7}},
		{"equal", []float64{1, 1, 1}},
		{"skewed", []float64{0.1, 0.1, 0.8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const size = 8
			for epoch := range 3 {
				b := LibraryBatches(groups, c.weights, size, 7, epoch, true)
				// Every batch full and from one library.
				count := make([]int, len(groups))
				for i, batch := range b {
					if len(batch) != size {
						t.Fatalf("epoch %d batch %d has %d examples, want %d", epoch, i, len(batch), size)
					}
					l := libOf[batch[0].Tool]
					for _, p := range batch {
						if libOf[p.Tool] != l {
							t.Fatalf("epoch %d batch %d mixes libraries %d and %d", epoch, i, l, libOf[p.Tool])
						}
					}
					count[l]++
				}
				// As many batches as the libraries' own batchings sum to (13 + 5 + 1), shared
				// by weight exactly.
				if len(b) != 19 {
					t.Errorf("epoch %d: %d batches, want 19", epoch, len(b))
				}
				if want := Apportion(c.weights, len(b)); !reflect.DeepEqual(count, want) {
					t.Errorf("epoch %d: batches per library %v, want %v", epoch, count, want)
				}
				// A pure function of (seed, epoch): a resumed run sees the same batches.
				if again := LibraryBatches(groups, c.weights, size, 7, epoch, true); !reflect.DeepEqual(b, again) {
					t.Errorf("epoch %d: batches differ between two calls", epoch)
				}
				if epoch > 0 && reflect.DeepEqual(b, LibraryBatches(groups, c.weights, size, 7, epoch-1, true)) {
					t.Errorf("epoch %d has epoch %d's batches", epoch, epoch-1)
				}
			}
		})
	}
}

func TestApportion(t *testing.T) {
	for _, c := range []struct {
		w    []float64
		n    int
		want []int
	}{
		{[]float64{1, 1, 1}, 10, []int{4, 3, 3}},
		{[]float64{0.5, 0.25, 0.25}, 8, []int{4, 2, 2}},
		{[]float64{1, 0, 3}, 5, []int{1, 0, 4}},
		{[]float64{1, 1}, 0, []int{0, 0}},
	} {
		if got := Apportion(c.w, c.n); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Apportion(%v, %d) = %v, want %v", c.w, c.n, got, c.want)
		}
	}
}
