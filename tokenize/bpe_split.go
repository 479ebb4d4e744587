package tokenize

import (
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizer patterns of the common byte-level tokenizers, which wordSplitter matches
// by hand (much faster than Go's regexp, which also lacks their lookahead): GPT-2's (the
// ByteLevel pre-tokenizer's use_regex, GPT-2, RoBERTa, GPT-NeoX, ModernBERT), Qwen2's (Qwen2,
// Qwen2.5, Qwen3) and Llama 3's (Qwen2's with up to three digits together).
const (
	qwen2Pattern  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// wordSplitter matches one of the known patterns: gpt2 (case-sensitive contractions, " ?"
// before letters, digits and other runs) or the Qwen2 family (case-insensitive contractions,
// one non-letter before letters, digits by at most maxDigits).
type wordSplitter struct {
	gpt2      bool
	maxDigits int
}

// knownSplitter returns the hand-written matcher of pattern, if it is a known one.
func knownSplitter(pattern string) (func(string) [][2]int, bool) {
	switch pattern {
	case gpt2Pattern:
		return wordSplitter{gpt2: true}.find, true
	case qwen2Pattern:
		return wordSplitter{maxDigits: 1}.find, true
	case llama3Pattern:
		return wordSplitter{maxDigits: 3}.find, true
	}
	return nil, false
}

func isWS(r rune) bool    { return unicode.Is(unicode.White_Space, r) }
func isL(r rune) bool     { return unicode.IsLetter(r) }
func isN(r rune) bool     { return unicode.IsNumber(r) }
func isOther(r rune) bool { return !isWS(r) && !isL(r) && !isN(r) } // [^\s\p{L}\p{N}]
func isCRLF(r rune) bool  { return r == '\r' || r == '\n' }
func runeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	return utf8.DecodeRuneInString(s[i:])
}

// find returns the successive matches of the pattern in s; with these patterns every position
// starts a match, so they tile s.
func (w wordSplitter) find(s string) [][2]int {
	var out [][2]int
	for i := 0; i < len(s); {
		e := w.match(s, i)
		out = append(out, [2]int{i, e})
		i = e
	}
	return out
}

// run returns the end of the run of runes from i that satisfy f.
func run(s string, i int, f func(rune) bool) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !f(r) {
			break
		}
		i += n
	}
	return i
}

// contraction returns the end of 's, 't, 're, 've, 'm, 'll or 'd at i (s[i] is '\”), or -1;
// fold makes it case-insensitive as Oniguruma's (?i) (ſ is s).
func contraction(s string, i int, fold bool) int {
	eq := func(r rune, c byte) bool {
		if r == rune(c) {
			return true
		}
		return fold && (unicode.ToLower(r) == rune(c) || (c == 's' && r == 'ſ'))
	}
	for _, c := range []string{"s", "t", "re", "ve", "m", "ll", "d"} {
		j := i + 1
		ok := true
		for k := 0; k < len(c); k++ {
			r, n := runeAt(s, j)
			if n == 0 || !eq(r, c[k]) {
				ok = false
				break
			}
			j += n
		}
		if ok {
			return j
		}
	}
	return -1
}

// match returns the end of the match starting at i (< len(s)), trying the pattern's
// alternatives in order, as a backtracking engine does.
func (w wordSplitter) match(s string, i int) int {
	c, cn := runeAt(s, i)
	if c == '\'' {
		if e := contraction(s, i, !w.gpt2); e >= 0 {
			return e
		}
	}
	next, nn := runeAt(s, i+cn)
	if w.gpt2 {
		// ` ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+`
		start := i
		if c == ' ' && nn > 0 {
			start, c = i+cn, next
		}
		switch {
		case isL(c):
			return run(s, start, isL)
		case isN(c):
			return run(s, start, isN)
		case isOther(c):
			return run(s, start, isOther)
		}
	} else {
		// `[^\r\n\p{L}\p{N}]?\p{L}+`
		if isL(c) {
			return run(s, i, isL)
		}
		if !isCRLF(c) && !isN(c) && nn > 0 && isL(next) {
			return run(s, i+cn, isL)
		}
		// `\p{N}{1,maxDigits}`
		if isN(c) {
			e := i
			for k := 0; k < w.maxDigits; k++ {
				r, n := runeAt(s, e)
				if n == 0 || !isN(r) {
					break
				}
				e += n
			}
			return e
		}
		// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
		start := -1
		if c == ' ' && nn > 0 && isOther(next) {
			start = i + cn
		} else if isOther(c) {
			start = i
		}
		if start >= 0 {
			return run(s, run(s, start, isOther), isCRLF)
		}
	}
	// c is whitespace. The run of whitespace from i:
	end := run(s, i, isWS)
	if !w.gpt2 {
		// `\s*[\r\n]+`: up to the run's last \r or \n.
		last := -1
		for j := i; j < end; {
			r, n := utf8.DecodeRuneInString(s[j:])
			if isCRLF(r) {
				last = j + n
			}
			j += n
		}
		if last >= 0 {
			return last
		}
	}
	// `\s+(?!\S)|\s+`: the whole run at the end of s, else all but its last character (one
	// character runs: \s+).
	if end == len(s) {
		return end
	}
	_, ln := utf8.DecodeLastRuneInString(s[i:end])
	if end-ln > i {
		return end - ln
	}
	return end
}
