package tokenize

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
// one token at a time from the longer sequence, from the second one on ties.
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

// Batch is a padded batch: IDs, Types and Mask are [len(texts)][Len].
type Batch struct {
	IDs, Types, Mask [][]int32
	Len              int
}

// Buckets are the default padded lengths: a batch is padded to the smallest bucket that holds
// its longest sequence (capped at the max length), so a model compiles once per bucket.
var Buckets = []int{8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512}

// BucketLen returns the padded length for sequences of length n under maxLen.
func BucketLen(n, maxLen int) int {
	for _, b := range Buckets {
		if b >= n {
			if maxLen > 0 && b > maxLen {
				return maxLen
			}
			return b
		}
	}
	if maxLen > 0 && n > maxLen {
		return maxLen
	}
	return n
}

// Pad pads sequences (and their token types, which may be nil) into a batch of bucketed length.
func (t *Tokenizer) Pad(seqs, types [][]int32, maxLen int) Batch {
	longest := 0
	for _, s := range seqs {
		longest = max(longest, len(s))
	}
	l := BucketLen(longest, maxLen)
	b := Batch{Len: l, IDs: make([][]int32, len(seqs)), Types: make([][]int32, len(seqs)), Mask: make([][]int32, len(seqs))}
	for i, s := range seqs {
		ids, ty, m := make([]int32, l), make([]int32, l), make([]int32, l)
		for j := range ids {
			ids[j] = t.pad
		}
		copy(ids, s)
		for j := 0; j < len(s) && j < l; j++ {
			m[j] = 1
			if types != nil {
				ty[j] = types[i][j]
			}
		}
		b.IDs[i], b.Types[i], b.Mask[i] = ids, ty, m
	}
	return b
}

// EncodeBatch tokenizes texts as single sequences and pads them into a bucketed batch.
func (t *Tokenizer) EncodeBatch(texts []string, maxLen int) Batch {
	seqs := make([][]int32, len(texts))
	for i, s := range texts {
		seqs[i] = t.Single(s, maxLen)
	}
	return t.Pad(seqs, nil, maxLen)
}

// EncodePairs tokenizes (a[i], b[i]) pairs and pads them into a bucketed batch.
func (t *Tokenizer) EncodePairs(a, b []string, maxLen int) Batch {
	seqs := make([][]int32, len(a))
	types := make([][]int32, len(a))
	for i := range a {
		seqs[i], types[i] = t.Pair(a[i], b[i], maxLen)
	}
	return t.Pad(seqs, types, maxLen)
}
