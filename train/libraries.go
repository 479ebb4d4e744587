package train

import (
	"math"
	"math/rand/v2"

	"github.com/toolret/toolret/data"
)

// LibraryBatches batches the pairs of several tool libraries so that every batch comes from
// one library (its in-batch negatives are tools of the same library), as sentence-transformers'
// multi-dataset batch samplers do. groups[l] are library l's pairs, weights[l] > 0 its share of
// the batches. Each library is batched on its own (NoDuplicateBatches with fill as given; with
// fill, a library's short last batch is topped up from the start of its own order, so every
// batch has size examples); an epoch has as many batches as the libraries' batches sum to,
// and library l gets round(weight share × that) of them, exactly (largest remainders), in a
// random order. A library asked for more batches than it has starts a new pass over its pairs
// in a new order; one asked for fewer leaves the rest for no one (its pairs are sampled, not
// all seen). The result is a deterministic function of (groups, weights, size, seed, epoch).
func LibraryBatches(groups [][]Pair, weights []float64, size int, seed uint64, epoch int, fill bool) [][]Pair {
	if size < 1 {
		size = 1
	}
	n := len(groups)
	passes := make([][][]Pair, n) // the current pass of each library
	next := make([]int, n)        // the next batch of that pass
	pass := make([]int, n)
	batchesOf := func(l, p int) [][]Pair {
		b := NoDuplicateBatches(groups[l], size, seed^uint64(l+1)*0x9e3779b97f4a7c15, epoch*1000+p, fill)
		if fill && len(b) > 0 {
			if last := b[len(b)-1]; len(last) < size {
				var flat []Pair // the pass's order before its last batch
				for _, x := range b[:len(b)-1] {
					flat = append(flat, x...)
				}
				if len(flat) == 0 { // the whole library fits in one batch: repeat it
					flat = append(flat, last...)
				}
				last = append([]Pair(nil), last...)
				for i := 0; len(last) < size; i++ {
					last = append(last, flat[i%len(flat)])
				}
				b[len(b)-1] = last
			}
		}
		return b
	}
	total := 0
	for l := range groups {
		if len(groups[l]) == 0 || !(weights[l] > 0) {
			continue
		}
		passes[l] = batchesOf(l, 0)
		total += len(passes[l])
	}
	counts := Apportion(weights, total)
	order := make([]int, 0, total)
	for l, c := range counts {
		if len(groups[l]) == 0 {
			continue
		}
		for range c {
			order = append(order, l)
		}
	}
	r := rand.New(rand.NewPCG(seed, uint64(epoch)^0x6c696272617279))
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	out := make([][]Pair, 0, len(order))
	for _, l := range order {
		if next[l] == len(passes[l]) {
			pass[l]++
			passes[l], next[l] = batchesOf(l, pass[l]), 0
		}
		out = append(out, passes[l][next[l]])
		next[l]++
	}
	return out
}

// Apportion shares n items among weights (each >= 0) in proportion, exactly n in all, by
// largest remainders (ties to the lower index).
func Apportion(weights []float64, n int) []int {
	sum := 0.0
	for _, w := range weights {
		if w > 0 {
			sum += w
		}
	}
	out := make([]int, len(weights))
	if sum == 0 || n <= 0 {
		return out
	}
	type rem struct {
		i int
		f float64
	}
	var rems []rem
	given := 0
	for i, w := range weights {
		if !(w > 0) {
			continue
		}
		x := float64(n) * w / sum
		out[i] = int(math.Floor(x))
		given += out[i]
		rems = append(rems, rem{i, x - math.Floor(x)})
	}
	for left := n - given; left > 0; left-- {
		best := 0
		for j := range rems {
			if rems[j].f > rems[best].f {
				best = j
			}
		}
		out[rems[best].i]++
		rems[best].f = -1
	}
	return out
}

// ByLibrary groups pairs by the library of their tool (d.Libraries, d.LibraryOf) and returns
// the groups with the libraries' weights: the input of LibraryBatches.
func ByLibrary(d *data.Dataset, pairs []Pair) (groups [][]Pair, weights []float64) {
	groups, weights = make([][]Pair, len(d.Libraries)), make([]float64, len(d.Libraries))
	for l, lib := range d.Libraries {
		weights[l] = lib.Weight
	}
	for _, p := range pairs {
		l := d.LibraryOf(p.Tool)
		groups[l] = append(groups[l], p)
	}
	return groups, weights
}
