package train

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// EpochOrder is a seeded permutation of items for each epoch, cached for the latest epoch
// asked: batch i of epoch e is a pure function of (Seed, Salt, e, i), as Task.Batch must be
// for exact resume. Salt keeps two tasks with one seed from sharing an order.
type EpochOrder struct {
	Items      []int
	Seed, Salt uint64

	epoch int
	order []int
}

// Of returns the order of epoch.
func (o *EpochOrder) Of(epoch int) []int {
	if o.order != nil && o.epoch == epoch {
		return o.order
	}
	p := slices.Clone(o.Items)
	r := rand.New(rand.NewPCG(o.Seed, uint64(epoch)+o.Salt))
	r.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	o.epoch, o.order = epoch, p
	return p
}

// Batch returns items [i·size, (i+1)·size) of epoch's order (the last batch may be short), or
// an error when batch i is past the end.
func (o *EpochOrder) Batch(epoch, i, size int) ([]int, error) {
	p := o.Of(epoch)
	lo, hi := i*size, min((i+1)*size, len(p))
	if size < 1 || lo >= hi {
		return nil, fmt.Errorf("batch %d of epoch %d out of range", i, epoch)
	}
	return p[lo:hi], nil
}

// FullBatches is the number of full batches of size in an epoch, at least 1: Task.Batches
// of a task that drops a trailing partial batch.
func (o *EpochOrder) FullBatches(size int) int { return max(len(o.Items)/size, 1) }
