package train

import (
	"math/rand/v2"
)

// Pair is one training example: a query and one of its relevant tools.
type Pair struct{ Query, Tool int }

// NoDuplicateBatches splits pairs into batches of at most size in which no two examples
// share a query or a tool (so in-batch negatives are real negatives), visiting every pair
// exactly once. The order is a deterministic function of (seed, epoch).
//
// Algorithm: shuffle the pairs; then fill batches greedily from a queue, deferring a pair
// whose query or tool is already in the current batch to a later batch (it keeps its place
// at the front of the queue). A batch closes when it is full or when no remaining pair fits.
//
// Strict (fill false), a tool used by n pairs forces at least n batches: on skewed data
// (ToolLens has a tool in 3,595 of 45k pairs) most batches end up tiny. With fill, a batch
// that no remaining pair can extend without a duplicate is topped up with the next pairs in
// queue order, so every batch but the last is full; the duplicates that remain are handled
// by InfoNCE's false-negative mask.
func NoDuplicateBatches(pairs []Pair, size int, seed uint64, epoch int, fill bool) [][]Pair {
	if size < 1 {
		size = 1
	}
	order := append([]Pair(nil), pairs...)
	r := rand.New(rand.NewPCG(seed, uint64(epoch)+0x9e3779b97f4a7c15))
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	var batches [][]Pair
	queue := order
	for len(queue) > 0 {
		qs, ts := map[int]bool{}, map[int]bool{}
		batch := make([]Pair, 0, size)
		rest := queue[:0:0]
		for i, p := range queue {
			if len(batch) == size {
				rest = append(rest, queue[i:]...)
				break
			}
			if qs[p.Query] || ts[p.Tool] {
				rest = append(rest, p)
				continue
			}
			qs[p.Query], ts[p.Tool] = true, true
			batch = append(batch, p)
		}
		if fill && len(batch) < size && len(rest) > 0 {
			k := min(size-len(batch), len(rest))
			batch = append(batch, rest[:k]...)
			rest = rest[k:]
		}
		batches = append(batches, batch)
		queue = rest
	}
	return batches
}
