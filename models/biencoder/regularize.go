package biencoder

import (
	"fmt"
	"math/rand/v2"
	"strings"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
)

// WordEmbeddings is the HF name of an encoder's token (word) embedding table, the same in
// every registered architecture (BERT, DeBERTa-v2/v3).
const WordEmbeddings = "embeddings.word_embeddings.weight"

// Regularization holds the training-only options meant to keep a query2tool bi-encoder from
// overfitting the tools it sees in training (train biencoder -freeze-embeddings,
// -tool-dropout). The zero value is plain training. Neither option changes the model, its
// configuration, evaluation or encoding.
type Regularization struct {
	// FreezeEmbeddings keeps the word embedding table (WordEmbeddings) of every tower at its
	// initial value: it is not a trainable variable of the training step, so it gets no
	// gradient, no optimizer state and no weight decay, and it is left out of the global
	// gradient norm that clipping uses. Position and token-type embeddings still train.
	FreezeEmbeddings bool
	// ToolDropout is the probability that each word of a training tool text (positives and
	// hard negatives) is dropped before tokenisation; see DropWords.
	ToolDropout float64
	// FreezeTower locks one tower of a bi-encoder with separate towers at its initial
	// weights (QueryTower or ToolTower; "": none), as LiT (Zhai et al. 2022) locks its image
	// tower: none of the tower's variables trains, and the tower runs as at inference (no
	// dropout, no gradient through it). With the tool tower locked, a tool never seen in
	// training is embedded exactly as the seen ones, and only the queries' side learns.
	FreezeTower string
}

// Validate checks the options.
func (r Regularization) Validate() error {
	if !(r.ToolDropout >= 0 && r.ToolDropout < 1) {
		return fmt.Errorf("biencoder: tool dropout %v: must be in [0, 1)", r.ToolDropout)
	}
	switch r.FreezeTower {
	case "", QueryTower, ToolTower:
	default:
		return fmt.Errorf("biencoder: freeze tower %q: want %s or %s", r.FreezeTower, QueryTower, ToolTower)
	}
	return nil
}

// Check reports the options that do not fit the model c: a locked tower needs separate
// towers (with one shared tower it would lock the whole model).
func (r Regularization) Check(c *Config) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if r.FreezeTower != "" && c.Shared {
		return fmt.Errorf("biencoder: freezing the %s tower needs separate towers (one shared tower would freeze the whole model)", r.FreezeTower)
	}
	return nil
}

// String describes the options ("none" for the zero value).
func (r Regularization) String() string {
	var parts []string
	if r.FreezeEmbeddings {
		parts = append(parts, "word embeddings frozen")
	}
	if r.ToolDropout > 0 {
		parts = append(parts, fmt.Sprintf("tool-text word dropout %g", r.ToolDropout))
	}
	if r.FreezeTower != "" {
		parts = append(parts, r.FreezeTower+" tower locked")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// freeze marks the word embedding table of each tower of c non-trainable, so that the
// optimizer (train.Optimizer.Update, which updates only trainable variables) leaves it alone.
// It runs in the training graph's construction, after the towers created their variables
// and before the optimizer lists them; a store restored from a checkpoint is marked again
// by each graph built. It panics (model.Exec returns the error) when a tower has no table.
func (r Regularization) freeze(c *Config, s *model.Scope) {
	for _, tower := range []string{QueryTower, ToolTower} {
		r.freezeTower(c, s, tower)
	}
}

// freezeTower is freeze for one tower's variables (all of them when it is the locked
// tower, else its word embeddings with FreezeEmbeddings): what a graph that embeds with
// that tower alone (a GradCache chunk) needs marked.
func (r Regularization) freezeTower(c *Config, s *model.Scope, tower string) {
	if r.FreezeTower != "" && tower == r.FreezeTower {
		n := 0
		for v := range encoder.In(s.Store().RootScope(), c.TowerBase(r.FreezeTower)).IterVariables() {
			v.SetTrainable(false)
			n++
		}
		if n == 0 || c.Shared {
			exceptions.Panicf("biencoder: freeze tower %s: no separate %s tower (scope %q)", r.FreezeTower, r.FreezeTower, c.TowerBase(r.FreezeTower))
		}
	}
	if !r.FreezeEmbeddings {
		return
	}
	v := encoder.Variable(s.Store(), c.TowerBase(tower), WordEmbeddings)
	if v == nil {
		exceptions.Panicf("biencoder: -freeze-embeddings: the %s tower (scope %q) has no %s", tower, c.TowerBase(tower), WordEmbeddings)
	}
	v.SetTrainable(false)
}

// embed is c.Embed for the training graph: a tower locked by FreezeTower runs in inference
// mode (no dropout) and passes no gradient back.
func (r Regularization) embed(c *Config, s *model.Scope, tower string, ids, mask *Node) *Node {
	if tower != r.FreezeTower || r.FreezeTower == "" {
		return c.Embed(s, tower, ids, mask)
	}
	g := ids.Graph()
	was := s.IsTraining(g)
	s.SetTraining(g, false)
	e := c.Embed(s, tower, ids, mask)
	s.SetTraining(g, was)
	return StopGradient(e)
}

// DropWords returns words with each one dropped independently with probability p, in their
// order. When every word would be dropped, one of them drawn uniformly is kept, so a text is
// never emptied (an empty input stays empty).
func DropWords(words []string, p float64, r *rand.Rand) []string {
	kept := make([]string, 0, len(words))
	for _, w := range words {
		if r.Float64() >= p {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 && len(words) > 0 {
		kept = append(kept, words[r.IntN(len(words))])
	}
	return kept
}

// dropRand returns the generator of the word dropout of one example of a training batch:
// seeded with (seed, epoch, batch, example) only, so a batch is a pure function of (seed,
// epoch, batch) and a resumed run sees the same texts.
func dropRand(seed uint64, epoch, batch, example int) *rand.Rand {
	h := mix64(mix64(mix64(uint64(epoch))^uint64(batch)) ^ uint64(example))
	return rand.New(rand.NewPCG(seed^0x746f6f6c64726f70, h)) // "tooldrop"
}

// mix64 is SplitMix64's finaliser: distinct (epoch, batch, example) get unrelated streams.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// toolTexts gives a training task the token sequences of tool texts: the sequences
// tokenized once (tools[i]) without tool dropout, else each text with its words dropped
// (DropWords, words split on white space) and tokenized again, per (epoch, batch, example).
// A word dropped this way is gone whole, punctuation attached; words past the tool max
// length may move into it.
type toolTexts struct {
	tools  [][]int32
	words  [][]string // nil without dropout
	prompt string     // before every text, never dropped
	p      float64
	seed   uint64
	tok    *tokenize.Tokenizer
	maxLen int
}

func newToolTexts(d *data.Dataset, tok *tokenize.Tokenizer, maxLen int, prompt string, seed uint64, p float64) toolTexts {
	x := toolTexts{tools: make([][]int32, len(d.Tools)), prompt: prompt, p: p, seed: seed, tok: tok, maxLen: maxLen}
	for i, tool := range d.Tools {
		x.tools[i] = tok.Single(prompt+tool.Text, maxLen)
	}
	if p > 0 {
		x.words = make([][]string, len(d.Tools))
		for i, tool := range d.Tools {
			x.words[i] = strings.Fields(tool.Text)
		}
	}
	return x
}

// seq returns the sequence of tool as example of batch i of epoch.
func (x toolTexts) seq(epoch, i, example, tool int) []int32 {
	if x.words == nil {
		return x.tools[tool]
	}
	w := DropWords(x.words[tool], x.p, dropRand(x.seed, epoch, i, example))
	return x.tok.Single(x.prompt+strings.Join(w, " "), x.maxLen)
}
