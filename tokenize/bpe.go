package tokenize

import (
	"container/heap"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// bpe is a byte-pair-encoding model (HF tokenizers' BPE) with the tokenizer.json pipeline
// around it: added tokens, normalizers, pre-tokenizers. Byte-level tokenizers (GPT-2, Qwen2/3,
// ModernBERT) map each byte of a pre-token to a printable character first (ByteLevel);
// SentencePiece-style ones (Gemma) spell characters missing from the vocabulary as <0xNN>
// byte tokens (byte_fallback).
type bpe struct {
	vocab        map[string]int32
	merges       map[uint64]bpeMerge // pairKey(left, right) -> rank and merged id
	unk          int32               // -1: no unknown token (characters out of vocabulary are dropped)
	fuseUnk      bool
	byteFallback bool
	byteIDs      [256]int32 // the ids of <0x00>..<0xFF>, -1 where the vocabulary lacks one
	ignoreMerges bool

	norms []normStep
	lower bool // a Lowercase normalizer
	pre   []preStep

	added     []bpeAdded // split out of the raw text (normalized false)
	addedNorm []bpeAdded // split out of the normalized text (normalized true)

	cacheMu sync.RWMutex
	cache   map[string][]int32
}

// bpeMerge is one merge rule: its rank (position in the merges list) and the merged token.
type bpeMerge struct {
	rank int32
	id   int32
}

// bpeAdded is an added token matched in the text before pre-tokenization.
type bpeAdded struct {
	content                    string
	id                         int32
	singleWord, lstrip, rstrip bool
}

// preStep is one HF pre-tokenizer: it splits each piece further (and may rewrite it).
type preStep func(pieces []string) []string

// bpeCacheMax bounds the per-word cache.
const bpeCacheMax = 1 << 16

// encode appends the ids of text (no template) to out.
func (b *bpe) encode(text string, out []int32) []int32 {
	text = strings.ToValidUTF8(text, "\uFFFD")
	for _, seg := range splitAdded(text, b.added) {
		if seg.id >= 0 {
			out = append(out, seg.id)
			continue
		}
		s := seg.text
		for _, f := range b.norms {
			s = f(s)
		}
		for _, seg2 := range splitAdded(s, b.addedNorm) {
			if seg2.id >= 0 {
				out = append(out, seg2.id)
				continue
			}
			if seg2.text == "" {
				continue // HF drops empty pieces before pre-tokenizing
			}
			pieces := []string{seg2.text}
			for _, p := range b.pre {
				pieces = p(pieces)
			}
			for _, w := range pieces {
				if w != "" {
					out = b.word(w, out)
				}
			}
		}
	}
	return out
}

type addedSeg struct {
	text string
	id   int32 // -1: plain text
}

// splitAdded cuts s around the added tokens, leftmost-longest as HF's AddedVocabulary does,
// with single_word, lstrip and rstrip. An empty s is one empty plain segment.
func splitAdded(s string, added []bpeAdded) []addedSeg {
	if len(added) == 0 || s == "" {
		return []addedSeg{{s, -1}}
	}
	var out []addedSeg
	done := 0           // end of the last segment emitted
	var first [256]bool // first bytes of the added tokens: most positions start none
	for k := range added {
		first[added[k].content[0]] = true
	}
	for i := 0; i < len(s); {
		best := -1
		if first[s[i]] {
			for k := range added {
				a := &added[k]
				if strings.HasPrefix(s[i:], a.content) && (best < 0 || len(a.content) > len(added[best].content)) {
					best = k
				}
			}
		}
		if best < 0 {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			continue
		}
		a := &added[best]
		start, stop := i, i+len(a.content)
		if a.singleWord {
			r, _ := utf8.DecodeLastRuneInString(s[:start])
			n, _ := utf8.DecodeRuneInString(s[stop:])
			if (start > 0 && isWordChar(r)) || (stop < len(s) && isWordChar(n)) {
				// HF's automaton moves past this match (non-overlapping matches).
				i = stop
				continue
			}
		}
		if a.lstrip {
			start = max(len(strings.TrimRightFunc(s[:start], unicode.IsSpace)), done)
		}
		if a.rstrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
		}
		if start > done {
			out = append(out, addedSeg{s[done:start], -1})
		}
		out = append(out, addedSeg{"", a.id})
		done, i = stop, stop
	}
	if done < len(s) {
		out = append(out, addedSeg{s[done:], -1})
	}
	return out
}

func isWordChar(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

// word appends the BPE tokens of one pre-token.
func (b *bpe) word(w string, out []int32) []int32 {
	b.cacheMu.RLock()
	ids, ok := b.cache[w]
	b.cacheMu.RUnlock()
	if ok {
		return append(out, ids...)
	}
	ids = b.merge(w)
	b.cacheMu.Lock()
	if len(b.cache) < bpeCacheMax {
		b.cache[w] = ids
	}
	b.cacheMu.Unlock()
	return append(out, ids...)
}

// bpeCand is a candidate merge of the symbol at pos with the one after it.
type bpeCand struct {
	rank, pos, id int32
}

type bpeQueue []bpeCand

func (q bpeQueue) Len() int { return len(q) }
func (q bpeQueue) Less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].pos < q[j].pos
}
func (q bpeQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *bpeQueue) Push(x any)   { *q = append(*q, x.(bpeCand)) }
func (q *bpeQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// merge runs BPE on w: its characters (byte tokens or the unknown token for those out of the
// vocabulary), then the lowest-ranked merge first, leftmost on ties, as HF's Word.merge_all.
func (b *bpe) merge(w string) []int32 {
	if b.ignoreMerges {
		if id, ok := b.vocab[w]; ok {
			return []int32{id}
		}
	}
	var sym []int32
	unkPending := false
	for i, r := range w {
		n := utf8.RuneLen(r)
		if r == utf8.RuneError {
			_, n = utf8.DecodeRuneInString(w[i:])
		}
		if id, ok := b.vocab[w[i:i+n]]; ok {
			if unkPending {
				sym = append(sym, b.unk)
				unkPending = false
			}
			sym = append(sym, id)
			continue
		}
		if b.byteFallback && b.haveBytes(w[i:i+n]) {
			if unkPending {
				sym = append(sym, b.unk)
				unkPending = false
			}
			for k := i; k < i+n; k++ {
				sym = append(sym, b.byteIDs[w[k]])
			}
			continue
		}
		if b.unk >= 0 {
			if unkPending && !b.fuseUnk {
				sym = append(sym, b.unk)
			}
			unkPending = true
		}
	}
	if unkPending {
		sym = append(sym, b.unk)
	}
	if len(sym) < 2 || len(b.merges) == 0 {
		return sym
	}
	next := make([]int32, len(sym))
	prev := make([]int32, len(sym))
	for i := range sym {
		next[i], prev[i] = int32(i+1), int32(i-1)
	}
	next[len(sym)-1] = -1
	alive := make([]bool, len(sym))
	for i := range alive {
		alive[i] = true
	}
	q := make(bpeQueue, 0, len(sym))
	for i := 0; i+1 < len(sym); i++ {
		if m, ok := b.merges[pairKey(sym[i], sym[i+1])]; ok {
			q = append(q, bpeCand{m.rank, int32(i), m.id})
		}
	}
	heap.Init(&q)
	for q.Len() > 0 {
		c := heap.Pop(&q).(bpeCand)
		p := c.pos
		if !alive[p] || next[p] < 0 {
			continue
		}
		r := next[p]
		if m, ok := b.merges[pairKey(sym[p], sym[r])]; !ok || m.id != c.id {
			continue
		}
		sym[p] = c.id
		alive[r] = false
		next[p] = next[r]
		if next[p] >= 0 {
			prev[next[p]] = p
		}
		if l := prev[p]; l >= 0 {
			if m, ok := b.merges[pairKey(sym[l], sym[p])]; ok {
				heap.Push(&q, bpeCand{m.rank, l, m.id})
			}
		}
		if n := next[p]; n >= 0 {
			if m, ok := b.merges[pairKey(sym[p], sym[n])]; ok {
				heap.Push(&q, bpeCand{m.rank, p, m.id})
			}
		}
	}
	out := make([]int32, 0, len(sym))
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, sym[i])
	}
	return out
}

// haveBytes reports whether every byte of s has its <0xNN> token.
func (b *bpe) haveBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if b.byteIDs[s[i]] < 0 {
			return false
		}
	}
	return true
}

// byteToRune is GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others
// for the characters from U+0100 on, in byte order.
var byteToRune = func() [256]rune {
	var m [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = rune(b)
		} else {
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}()

// byteLevel maps each byte of s to its character.
func byteLevel(s string) string {
	var sb strings.Builder
	sb.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		sb.WriteRune(byteToRune[s[i]])
	}
	return sb.String()
}

// gpt2Pattern is the regex of the ByteLevel pre-tokenizer (use_regex).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// splitBehavior is HF's SplitDelimiterBehavior.
type splitBehavior int

const (
	splitRemoved splitBehavior = iota
	splitIsolated
	splitMergedWithPrevious
	splitMergedWithNext
	splitContiguous
)

// splitStep is HF's Split pre-tokenizer: find returns the matches of its pattern in a piece.
func splitStep(find func(string) [][2]int, behavior splitBehavior, invert bool) preStep {
	return func(pieces []string) []string {
		var out []string
		for _, s := range pieces {
			out = append(out, splitPiece(s, find(s), behavior, invert)...)
		}
		return out
	}
}

// splitPiece cuts s at the matches m (sorted, non-overlapping) as HF's
// NormalizedString::split does.
func splitPiece(s string, m [][2]int, behavior splitBehavior, invert bool) []string {
	type span struct {
		start, end int
		match      bool
	}
	var spans []span
	prev := 0
	for _, x := range m {
		if x[0] > prev {
			spans = append(spans, span{prev, x[0], false})
		}
		spans = append(spans, span{x[0], x[1], true})
		prev = x[1]
	}
	if prev < len(s) {
		spans = append(spans, span{prev, len(s), false})
	}
	if invert {
		for i := range spans {
			spans[i].match = !spans[i].match
		}
	}
	type part struct {
		start, end int
		remove     bool
	}
	var parts []part
	switch behavior {
	case splitIsolated:
		for _, x := range spans {
			parts = append(parts, part{x.start, x.end, false})
		}
	case splitRemoved:
		for _, x := range spans {
			parts = append(parts, part{x.start, x.end, x.match})
		}
	case splitContiguous:
		prevMatch := false
		for _, x := range spans {
			if x.match == prevMatch && len(parts) > 0 {
				parts[len(parts)-1].end = x.end
			} else {
				parts = append(parts, part{x.start, x.end, false})
			}
			prevMatch = x.match
		}
	case splitMergedWithPrevious:
		prevMatch := false
		for _, x := range spans {
			if x.match && !prevMatch && len(parts) > 0 {
				parts[len(parts)-1].end = x.end
			} else {
				parts = append(parts, part{x.start, x.end, false})
			}
			prevMatch = x.match
		}
	case splitMergedWithNext:
		prevMatch := false
		for i := len(spans) - 1; i >= 0; i-- {
			x := spans[i]
			if x.match && !prevMatch && len(parts) > 0 {
				parts[len(parts)-1].start = x.start
			} else {
				parts = append(parts, part{x.start, x.end, false})
			}
			prevMatch = x.match
		}
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
	}
	var out []string
	for _, p := range parts {
		if !p.remove && p.end > p.start {
			out = append(out, s[p.start:p.end])
		}
	}
	return out
}

// literalFinder finds the non-overlapping occurrences of lit.
func literalFinder(lit string) func(string) [][2]int {
	return func(s string) [][2]int {
		if lit == "" {
			return nil
		}
		var out [][2]int
		for i := 0; ; {
			j := strings.Index(s[i:], lit)
			if j < 0 {
				return out
			}
			out = append(out, [2]int{i + j, i + j + len(lit)})
			i += j + len(lit)
		}
	}
}

// byteLevelStep is HF's ByteLevel pre-tokenizer: a space before each piece that does not
// start with one (add_prefix_space), the GPT-2 regex split (use_regex), then every byte
// mapped to its character.
func byteLevelStep(addPrefixSpace bool, find func(string) [][2]int) preStep {
	return func(pieces []string) []string {
		var out []string
		for _, s := range pieces {
			if addPrefixSpace && !strings.HasPrefix(s, " ") {
				s = " " + s
			}
			parts := []string{s}
			if find != nil {
				parts = splitPiece(s, find(s), splitIsolated, false)
			}
			for _, p := range parts {
				out = append(out, byteLevel(p))
			}
		}
		return out
	}
}
