// Package tokenize implements BERT's WordPiece tokenizer exactly as HuggingFace's tokenizers
// library does (BertNormalizer, BertPreTokenizer, WordPiece model, BERT post-processing):
// loaded from a vocab.txt or a tokenizer.json, for single texts and pairs, with truncation,
// padding and length bucketing; plus a WordPiece vocabulary builder for from-scratch models.
//
// The pipeline is written here rather than taken from github.com/sugarme/tokenizer v0.3.0,
// whose BERT pieces differ from HF's: its clean-text step keeps private-use (Co) and
// surrogate characters, its lowercasing ignores Final_Sigma and İ's full mapping, and its
// CJK ranges include U+2B820-U+2B91F. Parity with @huggingface/transformers is checked on
// a committed fixture (scripts/tokparity).
//
// The same Tokenizer also runs SentencePiece Unigram models (DeBERTa-v3's spm.model, or a
// Unigram tokenizer.json): see unigram.go, with SentencePiece's and HF's normalisation
// checked on a fixture (scripts/unigram, tokenize/testdata/unigram).
package tokenize

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// normalize applies BertNormalizer: clean text (drop NUL, U+FFFD and control characters,
// map whitespace to ' '), isolate CJK ideographs with spaces, strip accents, lowercase — in
// the order of the Rust implementation.
func (t *Tokenizer) normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		switch {
		case t.cleanText && (r == 0 || r == 0xFFFD || isControl(r)):
			continue
		case t.cleanText && isWhitespace(r):
			b.WriteByte(' ')
		case t.chineseChars && isCJK(r):
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	out := b.String()
	if t.stripAccents {
		var sb strings.Builder
		for _, r := range norm.NFD.String(out) {
			if !unicode.Is(unicode.Mn, r) {
				sb.WriteRune(r)
			}
		}
		out = sb.String()
	}
	if t.lower {
		out = lower(out)
	}
	return out
}

// lower lowercases s with Unicode's full (unconditional) mappings, as JavaScript's and
// Python's lower(): U+0130 (İ) becomes "i̇" and Σ becomes ς at the end of a word
// (Final_Sigma), else σ.
func lower(s string) string {
	if !strings.ContainsRune(s, 'Σ') {
		return strings.ToLower(strings.ReplaceAll(s, "\u0130", "i\u0307"))
	}
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range rs {
		switch {
		case r == 'Σ' && finalSigma(rs, i):
			b.WriteRune('ς')
		case r == 0x130:
			b.WriteString("i\u0307")
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma reports whether rs[i] is preceded by a cased letter and not followed by one,
// skipping case-ignorable characters (Unicode's Final_Sigma condition).
func finalSigma(rs []rune, i int) bool {
	j := i - 1
	for j >= 0 && caseIgnorable(rs[j]) {
		j--
	}
	if j < 0 || !cased(rs[j]) {
		return false
	}
	j = i + 1
	for j < len(rs) && caseIgnorable(rs[j]) {
		j++
	}
	return j == len(rs) || !cased(rs[j])
}

func cased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', '^', '`', 0xB7, 0x387, 0x55F, 0x5F4, 0x2018, 0x2019, 0x2024, 0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

func isWhitespace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || unicode.IsSpace(r) || unicode.Is(unicode.Zs, r)
}

func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

func isPunct(r rune) bool {
	if r < 128 {
		return (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126)
	}
	return unicode.IsPunct(r)
}

// preTokenize applies BertPreTokenizer: split on whitespace, and every punctuation character
// is a word of its own.
func preTokenize(s string) []string {
	var words []string
	start := -1
	for i, r := range s {
		switch {
		case isWhitespace(r):
			if start >= 0 {
				words = append(words, s[start:i])
				start = -1
			}
		case isPunct(r):
			if start >= 0 {
				words = append(words, s[start:i])
				start = -1
			}
			words = append(words, string(r))
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		words = append(words, s[start:])
	}
	return words
}

// wordPiece splits one word greedily, longest match first; a word with a piece missing from
// the vocabulary, or longer than maxInputChars characters, becomes [UNK].
func (t *Tokenizer) wordPiece(word string, out []int32) []int32 {
	runes := []rune(word)
	if len(runes) > t.maxInputChars {
		return append(out, t.unk)
	}
	start := len(out)
	for i := 0; i < len(runes); {
		j := len(runes)
		found := int32(-1)
		for ; j > i; j-- {
			piece := string(runes[i:j])
			if i > 0 {
				piece = t.prefix + piece
			}
			if id, ok := t.vocab[piece]; ok {
				found = id
				break
			}
		}
		if found < 0 {
			return append(out[:start], t.unk)
		}
		out = append(out, found)
		i = j
	}
	return out
}

// Encode returns the ids of text (WordPiece or Unigram), without added special tokens.
// Special tokens written literally in the text ("[SEP]") are matched first, on the raw text,
// as HF does with its added tokens.
func (t *Tokenizer) Encode(text string) []int32 {
	if t.bpe != nil {
		return t.bpe.encode(text, nil) // added tokens split out its own way (HF's AddedVocabulary)
	}
	var ids []int32
	for len(text) > 0 {
		at, special, id := len(text), "", int32(-1)
		for _, sp := range t.specials {
			if i := strings.Index(text, sp); i >= 0 && (i < at || (i == at && len(sp) > len(special))) {
				at, special, id = i, sp, t.vocab[sp]
			}
		}
		ids = t.encodeText(text[:at], ids)
		if id < 0 {
			break
		}
		ids = append(ids, id)
		text = text[at+len(special):]
	}
	return ids
}

// encodeText appends the ids of text, which holds no special token, to ids.
func (t *Tokenizer) encodeText(text string, ids []int32) []int32 {
	if t.uni != nil {
		return t.uni.encode(text, ids)
	}
	for _, w := range preTokenize(t.normalize(text)) {
		ids = t.wordPiece(w, ids)
	}
	return ids
}

// Tokens returns the tokens of text, without special tokens.
func (t *Tokenizer) Tokens(text string) []string {
	ids := t.Encode(text)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = t.inv[id]
	}
	return out
}
