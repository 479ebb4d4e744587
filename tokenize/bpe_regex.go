package tokenize

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// hfWhitespace is the content of a character class for Unicode White_Space, what \s means in
// the Oniguruma patterns of HF tokenizer.json files (Go's \s is ASCII only).
const hfWhitespace = `\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

// hfLookahead is the one lookaround construct of the GPT-2, GPT-NeoX and Qwen2 pre-tokenizer
// patterns: a run of whitespace that leaves its last character to the word after it.
const hfLookahead = `\s+(?!\S)`

// hfRegex is an HF tokenizer.json (Oniguruma) pattern run with Go's regexp: \s and \S are
// Unicode White_Space, and the alternative \s+(?!\S), which RE2 cannot express, is matched as
// \s+ and then cut as a backtracking engine would (see find).
type hfRegex struct {
	re *regexp.Regexp
	ws int // index of the group standing for \s+(?!\S); -1 when the pattern has none
	// rest is the pattern without that alternative, anchored: what Oniguruma tries next at a
	// position where the alternative fails.
	rest *regexp.Regexp
}

// compileHFRegex translates pat. Lookaround other than a top-level \s+(?!\S) alternative is
// refused, as are \S inside a character class and backreferences.
func compileHFRegex(pat string) (*hfRegex, error) {
	// The lookahead alternative, at the top level: between '|' (or the ends) at depth 0.
	alt := -1
	if i := strings.Index(pat, hfLookahead); i >= 0 {
		end := i + len(hfLookahead)
		depth, inClass := 0, false
		for j := 0; j < i; j++ {
			switch c := pat[j]; {
			case c == '\\':
				j++
			case inClass:
				if c == ']' {
					inClass = false
				}
			case c == '[':
				inClass = true
				if j+1 < i && pat[j+1] == ']' {
					j++
				}
			case c == '(':
				depth++
			case c == ')':
				depth--
			}
		}
		if depth != 0 || inClass || (i > 0 && pat[i-1] != '|') || (end < len(pat) && pat[end] != '|') {
			return nil, fmt.Errorf("regex %q: %s is supported only as a whole top-level alternative", pat, hfLookahead)
		}
		if strings.Contains(pat[end:], hfLookahead) {
			return nil, fmt.Errorf("regex %q: %s more than once", pat, hfLookahead)
		}
		alt = i
	}
	var full, rest string
	if alt < 0 {
		p, err := translateHFRegex(pat)
		if err != nil {
			return nil, err
		}
		full = p
	} else {
		before, err := translateHFRegex(pat[:alt])
		if err != nil {
			return nil, err
		}
		after, err := translateHFRegex(pat[alt+len(hfLookahead):])
		if err != nil {
			return nil, err
		}
		full = before + `(?P<hfws>[` + hfWhitespace + `]+)` + after
		rest = before + `[^\x00-\x{10FFFF}]` + after // never matches
	}
	re, err := regexp.Compile(full)
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", pat, err)
	}
	r := &hfRegex{re: re, ws: -1}
	if alt >= 0 {
		r.ws = re.SubexpIndex("hfws")
		if r.rest, err = regexp.Compile(`^(?:` + rest + `)`); err != nil {
			return nil, fmt.Errorf("regex %q: %w", pat, err)
		}
	}
	return r, nil
}

// translateHFRegex rewrites \s and \S as Unicode classes and refuses what RE2 lacks.
func translateHFRegex(pat string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c == '\\' && i+1 < len(pat):
			n := pat[i+1]
			i++
			switch {
			case n == 's' && inClass:
				b.WriteString(hfWhitespace)
			case n == 's':
				b.WriteString("[" + hfWhitespace + "]")
			case n == 'S' && inClass:
				return "", fmt.Errorf("regex %q: \\S inside a character class is not supported", pat)
			case n == 'S':
				b.WriteString("[^" + hfWhitespace + "]")
			case n >= '1' && n <= '9', n == 'k', n == 'g':
				return "", fmt.Errorf("regex %q: backreferences are not supported", pat)
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case inClass:
			if c == ']' {
				inClass = false
			}
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
			if i+1 < len(pat) && pat[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(pat) && pat[i+1] == ']' { // a literal ] first in a class
				b.WriteString(`\]`)
				i++
			}
		case c == '(' && (strings.HasPrefix(pat[i:], "(?=") || strings.HasPrefix(pat[i:], "(?!") ||
			strings.HasPrefix(pat[i:], "(?<=") || strings.HasPrefix(pat[i:], "(?<!")):
			return "", fmt.Errorf("regex %q: lookaround other than a top-level %s is not supported", pat, hfLookahead)
		case c == '(' && strings.HasPrefix(pat[i:], "(?>"):
			return "", fmt.Errorf("regex %q: atomic groups are not supported", pat)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// find returns the [start, end) byte spans of the successive non-overlapping matches of the
// pattern in s, as Oniguruma's search loop finds them (an empty match moves on by one
// character).
func (r *hfRegex) find(s string) [][2]int {
	var out [][2]int
	for pos := 0; pos <= len(s); {
		m := r.re.FindStringSubmatchIndex(s[pos:])
		if m == nil {
			break
		}
		start, end := pos+m[0], pos+m[1]
		if r.ws >= 0 && m[2*r.ws] >= 0 && end < len(s) {
			// \s+ took the whole run of whitespace and a non-space follows: \s+(?!\S)
			// gives back the last character, or fails when the run is one character,
			// and the alternatives after it are tried at the same position.
			_, last := utf8.DecodeLastRuneInString(s[start:end])
			if end-last > start {
				end -= last
			} else if n := r.rest.FindStringIndex(s[start:]); n != nil {
				end = start + n[1]
			} else {
				// No match starts here: search again from the next character.
				_, w := utf8.DecodeRuneInString(s[start:])
				pos = start + w
				continue
			}
		}
		out = append(out, [2]int{start, end})
		if end == start {
			if start >= len(s) {
				break
			}
			_, w := utf8.DecodeRuneInString(s[start:])
			pos = start + w
			continue
		}
		pos = end
	}
	return out
}
