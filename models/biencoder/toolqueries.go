package biencoder

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/losses"
	"github.com/toolret/toolret/models/textview"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// Pseudo queries (train biencoder -tool-queries N, Task.ToolQueries): each epoch, besides
// the real (query, tool) training pairs, N pseudo pairs per tool of the dataset, every tool
// with a text (held-out and dev tools included: a tool's text is known when the index is
// built; no test or dev query is used). A pseudo pair's positive is its tool; its query is a
// text made from the tool's own text (ToolQuery), drawn anew per (seed, epoch, pair).
const (
	// ToolQueryMinFrac and ToolQueryMaxFrac bound the fraction of the source's words a
	// span keeps (uniform), as Contriever's crops.
	ToolQueryMinFrac = 0.1
	ToolQueryMaxFrac = 0.5
	// ToolQueryMinWords is the fewest words a span keeps (all of a shorter source).
	ToolQueryMinWords = 3
	// ToolQueryNameRate is the probability that a tool with a name and a description
	// (textview.Fields) gets its name as the pseudo query, rather than a span of its
	// description.
	ToolQueryNameRate = 0.5
)

// ToolQuerySource is what a tool's pseudo queries are drawn from.
type ToolQuerySource struct {
	// Name is the tool's name field (tool and API names, or title; see textview.Fields),
	// empty when the tool has no name and description.
	Name string
	// Words are the white-space-separated words of its description field, or of its whole
	// text when it has no name and description.
	Words []string
}

// ToolQuerySourceOf returns the source of a tool's pseudo queries (no word: no pseudo query).
func ToolQuerySourceOf(t data.Tool) ToolQuerySource {
	if name, desc := textview.Fields(t); name != "" {
		return ToolQuerySource{Name: name, Words: strings.Fields(desc)}
	}
	return ToolQuerySource{Words: strings.Fields(t.Text)}
}

// ToolQuery draws a pseudo query from src with r: with a name, the name with probability
// ToolQueryNameRate; else a contiguous span of the words (textview.Span: a uniform fraction
// in [ToolQueryMinFrac, ToolQueryMaxFrac] of them, at least ToolQueryMinWords or all of a
// shorter source, at most maxWords), joined by spaces. The text is a function of r's state.
func ToolQuery(r *rand.Rand, src ToolQuerySource, maxWords int) string {
	if src.Name != "" && r.Float64() < ToolQueryNameRate {
		return src.Name
	}
	return strings.Join(textview.Span(r, src.Words, ToolQueryMinFrac, ToolQueryMaxFrac, ToolQueryMinWords, maxWords), " ")
}

// toolQueries are a task's pseudo pairs. Pseudo pair j (0 <= j < n·len(tools)) is the
// (j%n)-th pseudo query of tools[j/n]; its query id is base+j, base the number of the
// dataset's queries, so pseudo ids never meet a real query index (train.Pair, the sampler
// and the false-negative mask see ids only).
type toolQueries struct {
	n      int               // pseudo pairs per tool and epoch (0: none)
	base   int               // the first pseudo query id: len(Dataset.Queries)
	tools  []int             // the tools with a source, ascending
	src    []ToolQuerySource // src[i] of tools[i]
	seed   uint64
	tok    *tokenize.Tokenizer
	maxLen int    // query max length (tokens, specials included)
	prompt string // the query prompt, before every pseudo query
}

func newToolQueries(d *data.Dataset, tok *tokenize.Tokenizer, maxLen int, prompt string, seed uint64, n int) (toolQueries, error) {
	x := toolQueries{n: n, base: len(d.Queries), seed: seed, tok: tok, maxLen: maxLen, prompt: prompt}
	if n <= 0 {
		return x, nil
	}
	for i, t := range d.Tools {
		if s := ToolQuerySourceOf(t); len(s.Words) > 0 {
			x.tools, x.src = append(x.tools, i), append(x.src, s)
		}
	}
	if len(x.tools) == 0 {
		return x, fmt.Errorf("biencoder: %d tool queries per tool: dataset %s has no tool text to draw them from", n, d.Name)
	}
	return x, nil
}

// pairs returns the pseudo pairs of an epoch (the same every epoch; their texts vary).
func (x toolQueries) pairs() []train.Pair {
	p := make([]train.Pair, 0, x.n*len(x.tools))
	for i, tool := range x.tools {
		for k := range x.n {
			p = append(p, train.Pair{Query: x.base + i*x.n + k, Tool: tool})
		}
	}
	return p
}

// is reports whether query id q is a pseudo query.
func (x toolQueries) is(q int) bool { return x.n > 0 && q >= x.base }

// tool returns the tool of pseudo query id q.
func (x toolQueries) tool(q int) int { return x.tools[(q-x.base)/x.n] }

// text returns pseudo query id q's text in epoch.
func (x toolQueries) text(epoch, q int) string {
	return ToolQuery(toolQueryRand(x.seed, epoch, q-x.base), x.src[(q-x.base)/x.n], x.maxLen-2)
}

// seq returns pseudo query id q's token sequence in epoch.
func (x toolQueries) seq(epoch, q int) []int32 {
	return x.tok.Single(x.prompt+x.text(epoch, q), x.maxLen)
}

// relevance extends rel to the pseudo queries: each is relevant to its tool only.
func (x toolQueries) relevance(rel losses.Relevance) losses.Relevance {
	if x.n <= 0 {
		return rel
	}
	return func(q, t int) bool {
		if x.is(q) {
			return t == x.tool(q)
		}
		return rel(q, t)
	}
}

// toolQueryRand returns the generator of pseudo pair j's text in epoch: seeded with (seed,
// epoch, pair) only, whatever batch the pair lands in, so a resumed run draws the same texts.
func toolQueryRand(seed uint64, epoch, pair int) *rand.Rand {
	return rand.New(rand.NewPCG(seed^0x746f6f6c71756572, mix64(mix64(uint64(epoch))^uint64(pair)))) // "toolquer"
}

// ToolQueriesSummary describes the pseudo pairs of an epoch for the run summary: how many,
// from how many tools, of which how many are held out (Dataset.HeldOut) and how many are in
// no training pair; "" without tool queries.
func (t *Task) ToolQueriesSummary() string {
	x := t.pseudo
	if x.n <= 0 {
		return ""
	}
	seen := map[int]bool{}
	for _, p := range t.Train.Pairs() {
		seen[p[1]] = true
	}
	held := map[int]bool{}
	for _, h := range t.Data.HeldOut {
		held[h] = true
	}
	nHeld, nUnseen := 0, 0
	for _, tool := range x.tools {
		if held[tool] {
			nHeld++
		}
		if !seen[tool] {
			nUnseen++
		}
	}
	return fmt.Sprintf("%d pseudo pairs per epoch (%d per tool × %d tools with a text of %d; %d held-out tools, %d tools in no training pair)",
		x.n*len(x.tools), x.n, len(x.tools), len(t.Data.Tools), nHeld, nUnseen)
}
