package tokenize

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// unigram is a Unigram language-model segmenter (SentencePiece's model_type=unigram, HF
// tokenizers' Unigram model) with its normalisation: either SentencePiece's own (a model
// loaded from spm.model) or an HF tokenizer.json pipeline (normalizers, Metaspace). The two
// agree except on the edge cases listed in tokenize/testdata/unigram/README.md.
type unigram struct {
	hf     bool // HF tokenizers semantics (tokenizer.json) rather than SentencePiece's (spm.model)
	pieces []string
	scores []float32 // as stored in spm.model
	score  []float64 // as stored in tokenizer.json
	types  []uint8   // SentencePiece piece types (spm.model only)
	trie   pieceTrie
	unk    int32
	lower  bool // lowercase first (tokenizer_config.json's do_lower_case)

	// SentencePiece: min and max score of the NORMAL pieces, normalizer settings.
	minScore, maxScore float32
	cm                 *charsmap
	userSyms           *pieceTrie // USER_DEFINED pieces, copied unnormalized by the normalizer
	addDummyPrefix     bool
	removeExtraWS      bool
	escapeWS           bool
	wsSuffix           bool

	// HF: the normalizer steps, pre-tokenizer and min score over the whole vocabulary.
	norms    []normStep
	punct    bool   // Punctuation(isolated) pre-tokenizer before Metaspace
	wsSplit  bool   // WhitespaceSplit pre-tokenizer before Metaspace (transformers 5's XLM-RoBERTa)
	metaRep  string // Metaspace replacement ("" = no Metaspace)
	prepend  bool   // Metaspace prepend_scheme "always"
	split    bool   // Metaspace split
	hfMin    float64
	tokIndex map[string]int32
}

// normStep is one HF normalizer.
type normStep func(string) string

// pieceTrie is a byte trie over the pieces, with one map of edges (node<<8 | byte -> node).
type pieceTrie struct {
	next map[uint64]int32
	val  []int32 // piece id at each node, -1 if none
}

func newPieceTrie() pieceTrie { return pieceTrie{next: map[uint64]int32{}, val: []int32{-1}} }

func (t *pieceTrie) add(s string, id int32) {
	n := int32(0)
	for i := 0; i < len(s); i++ {
		k := uint64(n)<<8 | uint64(s[i])
		c, ok := t.next[k]
		if !ok {
			c = int32(len(t.val))
			t.val = append(t.val, -1)
			t.next[k] = c
		}
		n = c
	}
	if t.val[n] < 0 {
		t.val[n] = id
	}
}

// prefixes calls f(end, id) for each piece s[start:end], shortest first.
func (t *pieceTrie) prefixes(s string, start int, f func(end int, id int32)) {
	n := int32(0)
	for i := start; i < len(s); i++ {
		c, ok := t.next[uint64(n)<<8|uint64(s[i])]
		if !ok {
			return
		}
		n = c
		if t.val[n] >= 0 {
			f(i+1, t.val[n])
		}
	}
}

// longest returns the length of the longest piece prefixing s, 0 if none.
func (t *pieceTrie) longest(s string) int {
	l := 0
	t.prefixes(s, 0, func(end int, _ int32) { l = end })
	return l
}

const (
	spaceSymbol = "\u2581" // ▁
	unkPenalty  = 10
)

// encode appends the ids of text (no special tokens) to out.
func (u *unigram) encode(text string, out []int32) []int32 {
	if u.hf {
		return u.encodeHF(text, out)
	}
	if u.lower {
		text = lower(text)
	}
	return u.viterbiSPM(u.normalizeSPM(text), out)
}

// normalizeSPM is SentencePiece's Normalizer::Normalize: rules from the charsmap (longest
// match; user-defined symbols copied as they are; an invalid UTF-8 byte becomes U+FFFD),
// leading, trailing and repeated spaces removed (remove_extra_whitespaces), "▁" prefixed
// (add_dummy_prefix, or suffixed with treat_whitespace_as_suffix) and spaces escaped as "▁"
// (escape_whitespaces).
func (u *unigram) normalizeSPM(in string) string {
	if in == "" {
		return ""
	}
	if u.removeExtraWS {
		for in != "" {
			rep, n := u.spmPrefix(in)
			if rep != " " {
				break
			}
			in = in[n:]
		}
		if in == "" {
			return ""
		}
	}
	var b strings.Builder
	b.Grow(len(in) * 3)
	ws := func() {
		if u.escapeWS {
			b.WriteString(spaceSymbol)
		} else {
			b.WriteByte(' ')
		}
	}
	if !u.wsSuffix && u.addDummyPrefix {
		ws()
	}
	prevSpace := u.removeExtraWS
	for in != "" {
		sp, n := u.spmPrefix(in)
		for prevSpace && strings.HasPrefix(sp, " ") {
			sp = sp[1:]
		}
		if sp != "" {
			for i := 0; i < len(sp); i++ {
				if u.escapeWS && sp[i] == ' ' {
					b.WriteString(spaceSymbol)
				} else {
					b.WriteByte(sp[i])
				}
			}
			prevSpace = strings.HasSuffix(sp, " ")
		}
		in = in[n:]
		if !u.removeExtraWS {
			prevSpace = false
		}
	}
	s := b.String()
	if u.removeExtraWS {
		space := " "
		if u.escapeWS {
			space = spaceSymbol
		}
		for strings.HasSuffix(s, space) {
			s = s[:len(s)-len(space)]
		}
	}
	if u.wsSuffix && u.addDummyPrefix {
		if u.escapeWS {
			s += spaceSymbol
		} else {
			s += " "
		}
	}
	return s
}

// spmPrefix normalizes the start of s: the replacement and the bytes consumed.
func (u *unigram) spmPrefix(s string) (string, int) {
	if u.userSyms != nil {
		if n := u.userSyms.longest(s); n > 0 {
			return s[:n], n
		}
	}
	if u.cm != nil {
		if n, rep := u.cm.spmPrefix(s); n > 0 {
			return rep, n
		}
	}
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n <= 1 {
		return "\uFFFD", 1
	}
	return s[:n], n
}

// oneCharLen is SentencePiece's OneCharLen: a UTF-8 sequence's length from its first byte.
func oneCharLen(b byte) int { return [16]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4}[b>>4] }

type spNode struct {
	score float32
	start int32 // -1: no path ends here yet
	id    int32
}

// viterbiSPM is SentencePiece's Model::EncodeOptimized (path scores stored as float32,
// candidates summed in float64, ties kept by the first path found): the best-scoring segmentation of s into pieces; a character without a
// piece of its own gets [UNK] at min_score - 10, and runs of [UNK] are fused into one, as
// SentencePieceProcessor does. USER_DEFINED pieces score length*max_score - 0.1 (always
// chosen); UNUSED pieces are skipped.
func (u *unigram) viterbiSPM(s string, out []int32) []int32 {
	n := len(s)
	if n == 0 {
		return out
	}
	best := make([]spNode, n+1)
	for i := range best {
		best[i].start = -1
	}
	unkScore := u.minScore - unkPenalty
	for start := 0; start < n; {
		till := best[start].score
		mblen := min(oneCharLen(s[start]), n-start)
		single := false
		u.trie.prefixes(s, start, func(end int, id int32) {
			typ := u.types[id]
			if typ == pieceUnused {
				return
			}
			t := &best[end]
			length := end - start
			// As in C++, "user ? length*max_score - 0.1 : score" is a double, so the
			// candidate is summed and compared in double and stored as float.
			sc := float64(u.scores[id])
			if typ == pieceUserDefined {
				sc = float64(float32(float32(length)*u.maxScore)) - 0.1
			}
			if c := sc + float64(till); t.start < 0 || c > float64(t.score) {
				t.score, t.start, t.id = float32(c), int32(start), id
			}
			if length == mblen {
				single = true
			}
		})
		if !single {
			t := &best[start+mblen]
			if c := float32(unkScore + till); t.start < 0 || c > t.score {
				t.score, t.start, t.id = c, int32(start), u.unk
			}
		}
		start += mblen
	}
	// Backtrack, then emit in order with runs of [UNK] fused.
	var path []int32
	for end := n; end > 0; end = int(best[end].start) {
		path = append(path, best[end].id)
	}
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == u.unk && i+1 < len(path) && path[i+1] == u.unk {
			continue
		}
		out = append(out, path[i])
	}
	return out
}

// encodeHF runs the HF tokenizer.json pipeline on text: normalizers, pre-tokenizer
// (WhitespaceSplit, Punctuation, Metaspace), Unigram on each pre-token.
func (u *unigram) encodeHF(text string, out []int32) []int32 {
	text = strings.ToValidUTF8(text, "\uFFFD")
	for _, f := range u.norms {
		text = f(text)
	}
	if text == "" {
		return out
	}
	pre := []string{text}
	if u.wsSplit {
		// Unicode White_Space, as Rust's char::is_whitespace; both splits only cut (and
		// this one drops whitespace), so their order does not matter.
		pre = strings.FieldsFunc(text, func(r rune) bool { return unicode.Is(unicode.White_Space, r) })
	}
	if u.punct {
		var out []string
		for _, p := range pre {
			out = append(out, splitPunct(p)...)
		}
		pre = out
	}
	for _, p := range pre {
		if u.metaRep == "" {
			out = u.viterbiHF(p, out)
			continue
		}
		p = strings.ReplaceAll(p, " ", u.metaRep)
		if u.prepend && !strings.HasPrefix(p, u.metaRep) {
			p = u.metaRep + p
		}
		if !u.split {
			out = u.viterbiHF(p, out)
			continue
		}
		for p != "" { // split before each replacement character (MergedWithNext)
			i := strings.Index(p[1:], u.metaRep)
			if i < 0 {
				out = u.viterbiHF(p, out)
				break
			}
			out = u.viterbiHF(p[:i+1], out)
			p = p[i+1:]
		}
	}
	return out
}

// splitPunct is HF's Punctuation pre-tokenizer (behavior "isolated"): every punctuation
// character is a piece of its own.
func splitPunct(s string) []string {
	var out []string
	start := 0
	for i, r := range s {
		if isPunct(r) {
			if i > start {
				out = append(out, s[start:i])
			}
			n := utf8.RuneLen(r)
			if r == utf8.RuneError {
				n = 1
			}
			out = append(out, s[i:i+n])
			start = i + n
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

type hfNode struct {
	score float64
	start int32
	id    int32
}

// viterbiHF is HF tokenizers' Unigram::encode_optimized: as viterbiSPM but with float64
// scores, every vocabulary entry a candidate with its own score, [UNK] at the vocabulary's
// min score - 10; fused [UNK] runs are looked up as tokens (and are [UNK] unless in the
// vocabulary).
func (u *unigram) viterbiHF(s string, out []int32) []int32 {
	n := len(s)
	if n == 0 {
		return out
	}
	best := make([]hfNode, n+1)
	for i := range best {
		best[i].start = -1
	}
	unkScore := u.hfMin - unkPenalty
	for start := 0; start < n; {
		till := best[start].score
		_, mblen := utf8.DecodeRuneInString(s[start:])
		single := false
		u.trie.prefixes(s, start, func(end int, id int32) {
			t := &best[end]
			if c := u.score[id] + till; t.start < 0 || c > t.score {
				t.score, t.start, t.id = c, int32(start), id
			}
			if end-start == mblen {
				single = true
			}
		})
		if !single {
			t := &best[start+mblen]
			if c := unkScore + till; t.start < 0 || c > t.score {
				t.score, t.start, t.id = c, int32(start), u.unk
			}
		}
		start += mblen
	}
	type span struct{ start, end, id int32 }
	var path []span
	for end := n; end > 0; end = int(best[end].start) {
		path = append(path, span{best[end].start, int32(end), best[end].id})
	}
	for i := len(path) - 1; i >= 0; i-- {
		p := path[i]
		if p.id != u.unk {
			out = append(out, p.id)
			continue
		}
		j := i
		for j > 0 && path[j-1].id == u.unk {
			j--
		}
		id, ok := u.tokIndex[s[p.start:path[j].end]]
		if !ok {
			id = u.unk
		}
		out = append(out, id)
		i = j
	}
	return out
}

// HF normalizers.

func stripStep(left, right bool) normStep {
	return func(s string) string {
		if left {
			s = strings.TrimLeftFunc(s, unicode.IsSpace)
		}
		if right {
			s = strings.TrimRightFunc(s, unicode.IsSpace)
		}
		return s
	}
}

func replaceStep(re *regexp.Regexp, old, content string) normStep {
	if re != nil {
		return func(s string) string { return re.ReplaceAllLiteralString(s, content) }
	}
	return func(s string) string { return strings.ReplaceAll(s, old, content) }
}

// lowercaseStep is HF's Lowercase: each character's full lowercase mapping (Rust's
// char::to_lowercase: İ becomes "i̇"; Σ always σ).
func lowercaseStep(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == 0x130 {
			b.WriteString("i\u0307")
		} else {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

func unicodeStep(f norm.Form) normStep { return f.String }
