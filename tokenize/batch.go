package tokenize

import "sort"

// Single returns [CLS] text [SEP] ids, truncated to maxLen tokens (specials kept; maxLen <= 0
// means no limit, and maxLen < 2 is treated as 2).
func (t *Tokenizer) Single(text string, maxLen int) []int32 {
	ids := t.Encode(text)
	if maxLen > 0 {
		maxLen = max(maxLen, 2)
		if len(ids) > maxLen-2 {
			ids = ids[:maxLen-2]
		}
	}
	out := make([]int32, 0, len(ids)+2)
	out = append(out, t.cls)
	out = append(out, ids...)
	return append(out, t.sep)
}

// Pair returns [CLS] a [SEP] b [SEP] ids and token types (0 for the first part, 1 for the
// second), truncated to maxLen with the longest-first strategy of HF's Python tokenizers:
// one token at a time from the longer sequence, from the second one on ties (maxLen <= 0
// means no limit, and maxLen < 3 is treated as 3).
func (t *Tokenizer) Pair(a, b string, maxLen int) (ids, types []int32) {
	x, y := t.Encode(a), t.Encode(b)
	if maxLen > 0 {
		maxLen = max(maxLen, 3)
		for len(x)+len(y) > maxLen-3 {
			if len(x) > len(y) {
				x = x[:len(x)-1]
			} else {
				y = y[:len(y)-1]
			}
		}
	}
	ids = make([]int32, 0, len(x)+len(y)+3)
	ids = append(append(append(ids, t.cls), x...), t.sep)
	n := len(ids)
	ids = append(append(ids, y...), t.sep)
	types = make([]int32, len(ids))
	for i := n; i < len(types); i++ {
		types[i] = 1
	}
	return ids, types
}

// Batch is a padded batch, ready for bert.Runner.Run(b.IDs, b.Types, b.Mask): IDs, Types and
// Mask are [rows][Len] (Mask 1 on real tokens, 0 on padding).
type Batch struct {
	IDs, Types, Mask [][]int32
	Len              int
	// Index maps rows to the positions of their texts in the input, for batches made by
	// Batches (nil for EncodeBatch, EncodePairs and Pad, whose rows are in input order).
	Index []int
}

// DefaultBuckets are the default padded lengths: a batch is padded to the smallest bucket
// that holds its longest sequence (capped at the max length), so a model with static shapes
// compiles once per bucket. A Tokenizer's Buckets field overrides them.
var DefaultBuckets = []int{8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512}

// Bucket returns the padded length for a longest sequence of n tokens: the smallest of
// buckets >= n, capped at maxLen when maxLen > 0; n itself (capped) when no bucket fits.
func Bucket(n, maxLen int, buckets []int) int {
	l := -1
	for _, b := range buckets {
		if b >= n && (l < 0 || b < l) {
			l = b
		}
	}
	if l < 0 {
		l = n
	}
	if maxLen > 0 && l > maxLen {
		l = maxLen
	}
	return l
}

// BucketLen is Bucket with DefaultBuckets.
func BucketLen(n, maxLen int) int { return Bucket(n, maxLen, DefaultBuckets) }

func (t *Tokenizer) buckets() []int {
	if t.Buckets != nil {
		return t.Buckets
	}
	return DefaultBuckets
}

// Pad pads sequences (and their token types, which may be nil) into a batch whose length is
// the tokenizer's bucket for the longest sequence (capped at maxLen; longer sequences are cut).
func (t *Tokenizer) Pad(seqs, types [][]int32, maxLen int) Batch {
	longest := 0
	for _, s := range seqs {
		longest = max(longest, len(s))
	}
	l := Bucket(longest, maxLen, t.buckets())
	b := Batch{Len: l, IDs: make([][]int32, len(seqs)), Types: make([][]int32, len(seqs)), Mask: make([][]int32, len(seqs))}
	for i, s := range seqs {
		ids, ty, m := make([]int32, l), make([]int32, l), make([]int32, l)
		for j := range ids {
			ids[j] = t.pad
		}
		copy(ids, s)
		for j := 0; j < len(s) && j < l; j++ {
			m[j] = 1
			if types != nil && j < len(types[i]) {
				ty[j] = types[i][j]
			}
		}
		b.IDs[i], b.Types[i], b.Mask[i] = ids, ty, m
	}
	return b
}

// EncodeBatch tokenizes texts as single sequences and pads them into one bucketed batch.
func (t *Tokenizer) EncodeBatch(texts []string, maxLen int) Batch {
	seqs := make([][]int32, len(texts))
	for i, s := range texts {
		seqs[i] = t.Single(s, maxLen)
	}
	return t.Pad(seqs, nil, maxLen)
}

// EncodePairs tokenizes (a[i], b[i]) pairs and pads them into one bucketed batch. Pairs
// beyond the shorter of a and b are ignored.
func (t *Tokenizer) EncodePairs(a, b []string, maxLen int) Batch {
	n := min(len(a), len(b))
	seqs := make([][]int32, n)
	types := make([][]int32, n)
	for i := range n {
		seqs[i], types[i] = t.Pair(a[i], b[i], maxLen)
	}
	return t.Pad(seqs, types, maxLen)
}

// GroupByLength returns the indices of lens grouped into batches of at most size, in order
// of increasing length (stable), so each batch pads little; size < 1 means one batch.
func GroupByLength(lens []int, size int) [][]int {
	order := make([]int, len(lens))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return lens[order[a]] < lens[order[b]] })
	if size < 1 {
		size = max(len(order), 1)
	}
	var out [][]int
	for start := 0; start < len(order); start += size {
		out = append(out, order[start:min(start+size, len(order))])
	}
	return out
}

// Batches tokenizes texts as single sequences (truncated to maxLen) and returns them as
// bucketed batches of at most size texts of similar length; each batch's Index gives its
// rows' positions in texts.
func (t *Tokenizer) Batches(texts []string, maxLen, size int) []Batch {
	seqs := make([][]int32, len(texts))
	lens := make([]int, len(texts))
	for i, s := range texts {
		seqs[i] = t.Single(s, maxLen)
		lens[i] = len(seqs[i])
	}
	var out []Batch
	for _, idx := range GroupByLength(lens, size) {
		sub := make([][]int32, len(idx))
		for j, i := range idx {
			sub[j] = seqs[i]
		}
		b := t.Pad(sub, nil, maxLen)
		b.Index = idx
		out = append(out, b)
	}
	return out
}
