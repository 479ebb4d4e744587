package pretrain

import (
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/textview"
	"github.com/toolret/toolret/tokenize"
)

// Text is one text of the pre-training corpus.
type Text struct {
	Text string
	// Tool marks a tool text (else a query's).
	Tool bool
	// Name and Description are a tool's fields, the two views of ViewsFields; both empty
	// when the tool lacks one (and for queries).
	Name, Description string
}

// Corpus returns the pre-training texts of d: every tool's text (all tools: a library's new
// tools are known when it is indexed) and the texts of the given queries (a training split's:
// no test or dev query, and no relevance judgement), in that order, empty and repeated texts
// dropped. It also returns how many tool and query texts it kept.
func Corpus(d *data.Dataset, queries []int) (texts []Text, tools, qs int) {
	seen := map[string]bool{}
	for _, t := range d.Tools {
		s := strings.TrimSpace(t.Text)
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		name, desc := Fields(t)
		texts = append(texts, Text{Text: t.Text, Tool: true, Name: name, Description: desc})
		tools++
	}
	for _, q := range queries {
		s := strings.TrimSpace(d.Queries[q].Text)
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		texts = append(texts, Text{Text: d.Queries[q].Text})
		qs++
	}
	return texts, tools, qs
}

// QueryTexts returns the texts of queries (a dev split's), empty and repeated ones dropped.
func QueryTexts(d *data.Dataset, queries []int) []Text {
	seen := map[string]bool{}
	var out []Text
	for _, q := range queries {
		s := strings.TrimSpace(d.Queries[q].Text)
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, Text{Text: d.Queries[q].Text})
	}
	return out
}

// Fields returns a tool's name and description, the field pair of ViewsFields: the name is
// its tool and API names (ToolBench-style text or metadata), else its title; the description
// is the text's api_description, else (for a titled tool) its text. Both are empty unless
// both are known. It is textview.Fields, shared with the bi-encoder's pseudo queries.
func Fields(t data.Tool) (name, desc string) { return textview.Fields(t) }

// Specials are the token ids MLM never masks or draws as random replacements: [PAD], [CLS],
// [SEP], [UNK] and [MASK].
type Specials struct {
	Mask  int32 // the [MASK] id (-1: none, MLM impossible)
	Vocab int   // vocabulary size: random replacements are drawn from [0, Vocab)
	ids   map[int32]bool
}

// SpecialsOf returns tok's special tokens.
func SpecialsOf(tok *tokenize.Tokenizer) Specials {
	s := Specials{Mask: tok.MaskID(), Vocab: tok.VocabSize(), ids: map[int32]bool{}}
	for _, id := range []int32{tok.PadID(), tok.CLSID(), tok.SEPID(), tok.UNKID(), tok.MaskID()} {
		if id >= 0 {
			s.ids[id] = true
		}
	}
	return s
}

// Is reports whether id is special.
func (s Specials) Is(id int32) bool { return s.ids[id] }

// Masked is one sequence after masking.
type Masked struct {
	IDs       []int32 // the input: ids with the chosen positions replaced
	Positions []int   // the predicted positions, ascending
	Labels    []int32 // the original ids at Positions
}

// Mask applies BERT's masking to seq (token ids, special tokens included): of the positions
// holding a non-special token, round(rate × count) (at least one, when there is any) are
// drawn uniformly without replacement; each becomes [MASK] with probability 0.8, a random
// non-special token with 0.1, and stays with 0.1. seq is not modified. The draws come from r
// only, in a fixed order: the result is a function of r's state.
func Mask(r *rand.Rand, seq []int32, rate float64, sp Specials) Masked {
	var cand []int
	for i, id := range seq {
		if !sp.Is(id) {
			cand = append(cand, i)
		}
	}
	n := 0
	if len(cand) > 0 {
		n = max(1, int(rate*float64(len(cand))+0.5))
	}
	for i := 0; i < n; i++ { // partial Fisher-Yates: cand[:n] is a uniform n-subset
		j := i + r.IntN(len(cand)-i)
		cand[i], cand[j] = cand[j], cand[i]
	}
	pos := append([]int(nil), cand[:n]...)
	sort.Ints(pos)
	m := Masked{IDs: append([]int32(nil), seq...), Positions: pos, Labels: make([]int32, n)}
	for k, p := range pos {
		m.Labels[k] = seq[p]
		switch u := r.Float64(); {
		case u < 0.8:
			m.IDs[p] = sp.Mask
		case u < 0.9:
			m.IDs[p] = sp.random(r)
		}
	}
	return m
}

// random draws a non-special token id uniformly.
func (s Specials) random(r *rand.Rand) int32 {
	if len(s.ids) >= s.Vocab {
		return s.Mask // no ordinary token at all: cannot happen with a usable vocabulary
	}
	for {
		if id := int32(r.IntN(s.Vocab)); !s.ids[id] {
			return id
		}
	}
}

// MaxPredictions is the most positions Mask predicts in a sequence padded to n tokens (two of
// them special): the width of a batch's label tensors.
func MaxPredictions(n int, rate float64) int {
	return max(1, int(rate*float64(max(n-2, 0))+0.5))
}

// Crop returns a Contriever random crop of toks (token ids without special tokens): a
// contiguous span (textview.Span) of a uniform fraction in [lo, hi] of the tokens (at least
// MinCrop, or all of a shorter text; at most limit), then each token deleted with
// probability del (one kept at least). The draws come from r only.
func Crop(r *rand.Rand, toks []int32, lo, hi, del float64, limit int) []int32 {
	span := textview.Span(r, toks, lo, hi, MinCrop, limit)
	if len(span) == 0 {
		return nil
	}
	l := len(span)
	if del <= 0 {
		return append([]int32(nil), span...)
	}
	out := make([]int32, 0, l)
	for _, t := range span {
		if r.Float64() >= del {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		out = append(out, span[r.IntN(l)])
	}
	return out
}
