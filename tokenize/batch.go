package tokenize

// Single returns [CLS] text [SEP] ids (a BPE tokenizer: its post-processor's template, such
// as text <|endoftext|>), truncated to maxLen tokens (specials kept; maxLen <= 0 means no
// limit, and a maxLen below the number of specials is treated as that number).
func (t *Tokenizer) Single(text string, maxLen int) []int32 {
	ids := t.Encode(text)
	if t.tmpl != nil {
		return t.singleTemplate(ids, maxLen)
	}
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
	return t.PairOf(t.Encode(a), t.Encode(b), maxLen)
}

// PairOf joins the ids of two texts (no specials) as Pair does: [CLS] a [SEP] b [SEP], or
// with RoBERTa's two separators between them when DoubleSep (<s> a </s></s> b </s>), types 1
// from b on; truncated longest-first to maxLen tokens (specials included) when maxLen > 0.
func (t *Tokenizer) PairOf(a, b []int32, maxLen int) (ids, types []int32) {
	if t.tmpl != nil {
		return t.pairTemplate(a, b, maxLen)
	}
	x, y := a, b
	specials := 3
	if t.doubleSep {
		specials = 4
	}
	if maxLen > 0 {
		maxLen = max(maxLen, specials)
		for len(x)+len(y) > maxLen-specials {
			if len(x) > len(y) {
				x = x[:len(x)-1]
			} else {
				y = y[:len(y)-1]
			}
		}
	}
	ids = make([]int32, 0, len(x)+len(y)+specials)
	ids = append(append(append(ids, t.cls), x...), t.sep)
	if t.doubleSep {
		ids = append(ids, t.sep)
	}
	n := len(ids)
	ids = append(append(ids, y...), t.sep)
	types = make([]int32, len(ids))
	for i := n; i < len(types); i++ {
		types[i] = 1
	}
	return ids, types
}

// Batch is a padded batch: IDs, Types and Mask are [rows][Len] (Mask 1 on real tokens, 0 on
// padding). models/encoder turns it into tensors (encoder.Tensors) and batches many sequences
// by length (encoder.Map).
type Batch struct {
	IDs, Types, Mask [][]int32
	Len              int
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

func (t *Tokenizer) buckets() []int {
	if t.Buckets != nil {
		return t.Buckets
	}
	return DefaultBuckets
}

// MultipleBuckets returns the lengths m, 2m, 3m, ... up to the first one >= maxLen: with
// Bucket, a batch is padded to its longest sequence rounded up to a multiple of m, capped at
// maxLen, so there are at most ceil(maxLen/m) padded lengths. m <= 0 (or maxLen <= 0)
// returns []int{maxLen}: every batch padded to maxLen.
func MultipleBuckets(m, maxLen int) []int {
	if m <= 0 || maxLen <= 0 {
		return []int{maxLen}
	}
	var b []int
	for l := m; ; l += m {
		b = append(b, l)
		if l >= maxLen {
			return b
		}
	}
}

// Pad pads sequences (and their token types, which may be nil) into a batch whose length is
// the tokenizer's bucket for the longest sequence (capped at maxLen; longer sequences are cut).
func (t *Tokenizer) Pad(seqs, types [][]int32, maxLen int) Batch {
	return t.PadBuckets(seqs, types, maxLen, t.buckets())
}

// PadBuckets is Pad with the given buckets instead of the tokenizer's (see Bucket;
// MultipleBuckets).
func (t *Tokenizer) PadBuckets(seqs, types [][]int32, maxLen int, buckets []int) Batch {
	longest := 0
	for _, s := range seqs {
		longest = max(longest, len(s))
	}
	l := Bucket(longest, maxLen, buckets)
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

// singleTemplate lays ids out with the post-processor's single template (a BPE
// tokenizer.json's: "$A <|endoftext|>", "[CLS] $A [SEP]", "<bos> $A <eos>"), the text
// truncated so that the whole fits maxLen (maxLen <= 0: no limit; at least the specials).
func (t *Tokenizer) singleTemplate(ids []int32, maxLen int) []int32 {
	n := specialsIn(t.tmpl.single)
	if maxLen > 0 {
		maxLen = max(maxLen, n)
		if len(ids) > maxLen-n {
			ids = ids[:maxLen-n]
		}
	}
	out := make([]int32, 0, len(ids)+n)
	for _, it := range t.tmpl.single {
		if it.seq == 1 {
			out = append(out, ids...)
		} else {
			out = append(out, it.ids...)
		}
	}
	return out
}

// pairTemplate is PairOf with the post-processor's pair template, its token types included.
func (t *Tokenizer) pairTemplate(a, b []int32, maxLen int) (ids, types []int32) {
	n := specialsIn(t.tmpl.pair)
	x, y := a, b
	if maxLen > 0 {
		maxLen = max(maxLen, n)
		for len(x)+len(y) > maxLen-n {
			if len(x) > len(y) {
				x = x[:len(x)-1]
			} else {
				y = y[:len(y)-1]
			}
		}
	}
	ids = make([]int32, 0, len(x)+len(y)+n)
	types = make([]int32, 0, cap(ids))
	for _, it := range t.tmpl.pair {
		part := it.ids
		switch it.seq {
		case 1:
			part = x
		case 2:
			part = y
		}
		ids = append(ids, part...)
		for range part {
			types = append(types, it.typeID)
		}
	}
	return ids, types
}
