package biencoder

import (
	"fmt"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// Padding is how a training batch's texts of one tower are padded to a common length. Each
// distinct padded length is one more input shape, which GoMLX compiles once (an Exec caches
// one executable per input shape).
//
// A Padding > 0 pads to the batch's longest sequence rounded up to a multiple of it, capped
// at the tower's max length (train biencoder -pad-multiple N): at most ceil(maxLen/N)
// lengths per tower.
type Padding int

const (
	// PadTokenizer (the zero value) pads to the tokenizer's length buckets
	// (tokenize.DefaultBuckets: 8, 16, 24, 32, 48, 64, 96, ...) capped at the max length: the
	// padding of every run trained before -pad-multiple, so that they resume bit for bit.
	PadTokenizer Padding = 0
	// PadFixed pads every batch to the tower's max length (-pad-multiple 0).
	PadFixed Padding = -1
)

// DefaultPadMultiple is train biencoder's -pad-multiple.
const DefaultPadMultiple = 16

// PadMultiple returns the Padding of a -pad-multiple flag value: n > 0 rounds up to
// multiples of n, 0 is PadFixed.
func PadMultiple(n int) (Padding, error) {
	switch {
	case n < 0:
		return 0, fmt.Errorf("-pad-multiple %d: must be >= 0 (0: pad to -query-len/-tool-len)", n)
	case n == 0:
		return PadFixed, nil
	}
	return Padding(n), nil
}

// String describes the padding.
func (p Padding) String() string {
	switch {
	case p == PadTokenizer:
		return "tokenizer buckets"
	case p == PadFixed:
		return "fixed (max length)"
	case p > 0:
		return fmt.Sprintf("longest rounded up to a multiple of %d", int(p))
	}
	return fmt.Sprintf("invalid padding %d", int(p))
}

// buckets returns the padded lengths of a tower with max length maxLen; nil means the
// tokenizer's own.
func (p Padding) buckets(maxLen int) []int {
	switch {
	case p > 0:
		return tokenize.MultipleBuckets(int(p), maxLen)
	case p == PadFixed:
		return []int{maxLen}
	}
	return nil
}

// Lengths returns how many distinct padded lengths a tower of max length maxLen can get
// (the tokenizer's buckets: those up to maxLen, plus maxLen).
func (p Padding) Lengths(tok *tokenize.Tokenizer, maxLen int) int {
	b := p.buckets(maxLen)
	if b == nil {
		b = tok.Buckets
		if b == nil {
			b = tokenize.DefaultBuckets
		}
	}
	seen := map[int]bool{}
	for _, l := range b {
		seen[min(l, maxLen)] = true
	}
	seen[maxLen] = true // a longest sequence past every bucket
	return len(seen)
}

// Pad turns token sequences into ids and mask tensors [rows, l], l the padded length of the
// batch under p (sequences longer than maxLen are cut).
func (p Padding) Pad(tok *tokenize.Tokenizer, seqs [][]int32, maxLen int) (ids, mask *tensors.Tensor) {
	var b tokenize.Batch
	if bs := p.buckets(maxLen); bs != nil {
		b = tok.PadBuckets(seqs, nil, maxLen, bs)
	} else {
		b = tok.Pad(seqs, nil, maxLen)
	}
	ids, _, mask = encoder.Tensors(b)
	return ids, mask
}

// maxShapes bounds the number of distinct input shapes of a training task's batches: the
// product of the padded lengths of each padded input (towers) and of the batch sizes.
func maxShapes(sizes int, lengths ...int) int {
	n := max(sizes, 1)
	for _, l := range lengths {
		n *= max(l, 1)
	}
	return n
}

// pairBatches are the in-batch-negative batches of the (query, tool) pairs of Task and
// FeedbackTask for epoch: train.NoDuplicateBatches (topped up unless strict), less a
// trailing batch of one example, which has no in-batch negative.
func pairBatches(pairs []train.Pair, size int, seed uint64, epoch int, strict bool) [][]train.Pair {
	b := train.NoDuplicateBatches(pairs, size, seed, epoch, !strict)
	if n := len(b); n > 1 && len(b[n-1]) < 2 {
		b = b[:n-1]
	}
	return b
}

// pairShapes is the MaxShapes of Task and FeedbackTask: the batch sizes (full, and a short
// last batch; any size from 2 when strict) times the padded query, tool and, with
// negatives, hard-negative lengths.
func pairShapes(cfg *Config, tok *tokenize.Tokenizer, p Padding, size int, strict, negatives bool) int {
	sizes := 2
	if strict {
		sizes = size
	}
	q, tl := p.Lengths(tok, cfg.QueryMaxLen), p.Lengths(tok, cfg.ToolMaxLen)
	if negatives {
		return maxShapes(sizes, q, tl, tl)
	}
	return maxShapes(sizes, q, tl)
}
