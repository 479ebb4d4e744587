// Package textview draws self-supervised views of a tool's text: random contiguous spans
// (Contriever-style crops) and the tool's name and description fields. Pre-training
// (models/pretrain: crops of token ids, name/description pairs) and the bi-encoder's pseudo
// queries (models/biencoder, train biencoder -tool-queries: word spans, names) share it.
package textview

import (
	"math/rand/v2"
	"strings"

	"github.com/toolret/toolret/data"
)

// Span returns a random contiguous span of xs (a subslice, not a copy): its length is a
// uniform fraction in [lo, hi] of len(xs), rounded down, raised to least (all of a shorter
// xs), capped at limit and at len(xs), and at least 1; its start is uniform among the
// positions where it fits. It draws r.Float64() and then r.IntN, nothing else, so the span
// is a function of r's state. Span of an empty xs is nil and draws nothing.
func Span[T any](r *rand.Rand, xs []T, lo, hi float64, least, limit int) []T {
	n := len(xs)
	if n == 0 {
		return nil
	}
	l := int((lo + r.Float64()*(hi-lo)) * float64(n))
	l = max(l, min(least, n))
	l = max(min(l, limit, n), 1)
	start := r.IntN(n - l + 1)
	return xs[start : start+l]
}

// Fields returns a tool's name and description: the name is its tool and API names
// (ToolBench-style text or metadata), else its title; the description is the text's
// api_description, else (for a titled tool) its text. Both are empty unless both are known.
func Fields(t data.Tool) (name, desc string) {
	f := data.ParseToolBenchText(t.Text)
	tool, api := t.ToolName, t.APIName
	if tool == "" && api == "" {
		tool, api = f["tool_name"], f["api_name"]
	}
	name = strings.TrimSpace(strings.TrimSpace(tool) + " " + strings.TrimSpace(api))
	desc = strings.TrimSpace(f["api_description"])
	if name == "" && strings.TrimSpace(t.Title) != "" {
		name = strings.TrimSpace(t.Title)
		if desc == "" {
			desc = strings.TrimSpace(t.Text)
		}
	}
	if name == "" || desc == "" {
		return "", ""
	}
	return name, desc
}
