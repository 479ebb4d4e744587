package textview

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
)

// TestSpan: spans are contiguous, their lengths within the fractions (at least least, or the
// whole of a shorter input; at most limit), several lengths and starts are drawn, and the
// same generator state gives the same span.
func TestSpan(t *testing.T) {
	words := strings.Fields(strings.Repeat("a b c d e f g h i j ", 4)) // 40 words
	for i := range words {
		words[i] += string(rune('0'+i%10)) + string(rune('a'+i/10))
	}
	for _, tc := range []struct {
		name           string
		n              int
		lo, hi         float64
		least, limit   int
		minLen, maxLen int
	}{
		{"fractions", 40, 0.1, 0.5, 3, 100, 4, 20},
		{"at least", 20, 0.1, 0.1, 3, 100, 3, 3},
		{"short input whole", 2, 0.1, 0.5, 3, 100, 2, 2},
		{"limit", 40, 0.5, 0.5, 3, 7, 7, 7},
		{"one word", 1, 0.1, 0.5, 3, 100, 1, 1},
	} {
		r := rand.New(rand.NewPCG(7, 7))
		lens, starts := map[int]bool{}, map[int]bool{}
		for range 1000 {
			s := Span(r, words[:tc.n], tc.lo, tc.hi, tc.least, tc.limit)
			if len(s) < tc.minLen || len(s) > tc.maxLen {
				t.Fatalf("%s: span of %d words, want [%d, %d]", tc.name, len(s), tc.minLen, tc.maxLen)
			}
			k := slices.Index(words, s[0])
			if k < 0 || k+len(s) > tc.n || !slices.Equal(s, words[k:k+len(s)]) {
				t.Fatalf("%s: %q is not a span of the input", tc.name, s)
			}
			lens[len(s)], starts[k] = true, true
		}
		if tc.minLen < tc.maxLen && len(lens) < 5 {
			t.Errorf("%s: %d span lengths drawn", tc.name, len(lens))
		}
		if tc.n > tc.maxLen && len(starts) < tc.n-tc.maxLen {
			t.Errorf("%s: %d starts drawn", tc.name, len(starts))
		}
	}
	if s := Span(rand.New(rand.NewPCG(1, 1)), []string(nil), 0.1, 0.5, 3, 10); s != nil {
		t.Errorf("span of nothing: %q", s)
	}
	a := Span(rand.New(rand.NewPCG(3, 1)), words, 0.1, 0.5, 3, 64)
	b := Span(rand.New(rand.NewPCG(3, 1)), words, 0.1, 0.5, 3, 64)
	if !slices.Equal(a, b) {
		t.Error("same generator state, different spans")
	}
}

func TestFields(t *testing.T) {
	for _, tc := range []struct {
		tool       data.Tool
		name, desc string
	}{
		{data.Tool{Title: "Weather", Text: "current weather"}, "Weather", "current weather"},
		{data.Tool{Text: "tool_name:X, api_name:Y"}, "", ""},
		{data.Tool{Text: "plain text"}, "", ""},
		{data.Tool{Text: "category_name:C, tool_name:T, api_name:A, api_description:does a thing., required_params: []"}, "T A", "does a thing."},
		{data.Tool{ToolName: "M", APIName: "N", Text: "tool_name:T, api_name:A, api_description:d"}, "M N", "d"},
	} {
		if n, d := Fields(tc.tool); n != tc.name || d != tc.desc {
			t.Errorf("Fields(%+v): %q / %q, want %q / %q", tc.tool, n, d, tc.name, tc.desc)
		}
	}
}
