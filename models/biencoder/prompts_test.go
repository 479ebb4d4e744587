package biencoder

import (
	"slices"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
)

// TestTaskPrompts: with prompts, every training and dev query (real and pseudo) is tokenized
// after the query prompt and every tool text (whole or with words dropped) after the tool
// prompt, which dropout never drops; without, the texts as they are.
func TestTaskPrompts(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.HoldoutTools(0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, tr, dev, err := rundir.Carve(v, "train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"represent this query", "passage"}
	for _, tool := range v.Tools {
		texts = append(texts, tool.Text)
	}
	vocab, err := tokenize.BuildVocab(texts, 400, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := encoder.New("bert", encoder.Sizes{Vocab: tok.VocabSize(), Layers: 1, Hidden: 8, Heads: 2, Intermediate: 16, MaxPositions: 64})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, query, tool string
		dropout           float64
	}{
		{"none", "", "", 0},
		{"both", "represent this query: ", "passage: ", 0},
		{"tool dropout", "represent this query: ", "passage: ", 0.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := &Task{
				Cfg: &Config{Encoder: bc, Pooling: encoder.PoolMean, Shared: true, QueryMaxLen: 48, ToolMaxLen: 64, Similarity: "cosine",
					Temperature: 0.05, QueryPrompt: c.query, ToolPrompt: c.tool},
				Data: v, Train: tr, Dev: dev, Tok: tok, BatchSize: 16, Seed: 1, ToolQueries: 1, Reg: Regularization{ToolDropout: c.dropout},
			}
			if err := x.Prepare(); err != nil {
				t.Fatal(err)
			}
			for _, q := range append(slices.Clone(tr.Queries), dev.Queries...) {
				if want := tok.Single(c.query+v.Queries[q].Text, 48); !slices.Equal(x.queries[q], want) {
					t.Fatalf("query %d: %v, want %v", q, x.queries[q], want)
				}
			}
			qp, tp := tok.Single(c.query, 0), tok.Single(c.tool, 0)
			qp, tp = qp[1:len(qp)-1], tp[1:len(tp)-1] // without [CLS] and [SEP]
			hasPrefix := func(seq, p []int32) bool { return len(seq) > len(p) && slices.Equal(seq[1:1+len(p)], p) }
			for i := range 2 {
				for j, p := range x.batches(0)[i] {
					ts := x.texts.seq(0, i, j, p.Tool)
					if !hasPrefix(ts, tp) || (c.dropout == 0 && !slices.Equal(ts, tok.Single(c.tool+v.Tools[p.Tool].Text, 64))) {
						t.Fatalf("tool %d of batch %d: %v, want it after the prompt %v", p.Tool, i, ts, tp)
					}
					if x.pseudo.is(p.Query) {
						if qs := x.pseudo.seq(0, p.Query); !hasPrefix(qs, qp) || !slices.Equal(qs, tok.Single(c.query+x.pseudo.text(0, p.Query), 48)) {
							t.Fatalf("pseudo query %d: %v, want it after the prompt %v", p.Query, qs, qp)
						}
					}
				}
			}
		})
	}
}
