package biencoder

import (
	"slices"
	"testing"
)

// TestTaskPrompts: with prompts, every training and dev query (real and pseudo) is tokenized
// after the query prompt and every tool text (whole or with words dropped) after the tool
// prompt, which dropout never drops; without, the texts as they are.
func TestTaskPrompts(t *testing.T) {
	for _, c := range []struct {
		name, query, tool string
		dropout           float64
	}{
		{"none", "", "", 0},
		{"both", "represent this query: ", "passage: ", 0},
		{"tool dropout", "represent this query: ", "passage: ", 0.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := newHeldOutTask(t, func(x *Task) {
				x.Cfg.QueryMaxLen, x.Cfg.ToolMaxLen, x.Cfg.QueryPrompt, x.Cfg.ToolPrompt = 48, 64, c.query, c.tool
				x.BatchSize, x.ToolQueries, x.Reg = 16, 1, Regularization{ToolDropout: c.dropout}
			})
			v, tok := x.Data, x.Tok
			for _, q := range append(slices.Clone(x.Train.Queries), x.Dev.Queries...) {
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
