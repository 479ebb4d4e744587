// Package pooling names how an encoder's token states become one vector per text and
// computes the poolings every encoder shares. Encoders (models/bert, ...) and models/encoder
// use it, so that a pooling name means the same thing everywhere.
package pooling

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Pooling names how token states become one vector per text.
type Pooling string

// Poolings.
const (
	CLS    Pooling = "cls"    // the first ([CLS]) token's final hidden state
	Mean   Pooling = "mean"   // mean over real (unpadded) tokens
	Pooler Pooling = "pooler" // the model's pooler layer over [CLS] (BERT: dense + tanh)
	None   Pooling = "none"   // no pooling: all token states
)

// Parse validates a pooling name.
func Parse(s string) (Pooling, error) {
	switch p := Pooling(s); p {
	case CLS, Mean, Pooler, None, Last:
		return p, nil
	}
	return "", fmt.Errorf("unknown pooling %q (cls, mean, pooler, lasttoken, none)", s)
}

// Pool reduces hidden [batch, seq, hidden] to [batch, hidden], or returns hidden unchanged for
// None. mask is [batch, seq] with 1 for real tokens (any numeric dtype). pooler maps the [CLS]
// states [batch, hidden] through the model's pooler layer; it may be nil when p is not Pooler.
// An unknown pooling panics, as graph-building errors do (model.Exec turns panics into errors).
func Pool(hidden, mask *Node, p Pooling, pooler func(cls *Node) *Node) *Node {
	switch p {
	case None:
		return hidden
	case Mean:
		m := InsertAxes(ConvertDType(mask, hidden.DType()), -1) // [B, S, 1]
		sum := ReduceSum(Mul(hidden, m), 1)
		n := Max(ReduceSum(m, 1), ScalarOne(hidden.Graph(), hidden.DType())) // as HF: clamp(min=1e-9)
		return Div(sum, n)
	case CLS:
		return First(hidden)
	case Last:
		return LastToken(hidden, mask)
	case Pooler:
		if pooler == nil {
			exceptions.Panicf("pooling %q: this encoder has no pooler layer", p)
		}
		return pooler(First(hidden))
	}
	exceptions.Panicf("unknown pooling %q (cls, mean, pooler, lasttoken, none)", p)
	return nil
}

// First returns the first token's states [batch, hidden] of hidden [batch, seq, hidden].
func First(hidden *Node) *Node {
	return Squeeze(Slice(hidden, AxisRange(), AxisRange(0, 1)), 1)
}
