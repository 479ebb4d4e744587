package losses

import (
	"math"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
)

func bceGraph(labels []float64, mask []bool) lossGraph {
	return func(xs []*Node) *Node {
		g := xs[0].Graph()
		var m *Node
		if mask != nil {
			m = Const(g, mask)
		}
		return BCEWithLogits(xs[0], Const(g, labels), m)
	}
}

func TestBCEWithLogitsHandComputed(t *testing.T) {
	// logits (2, -1, 0), labels (1, 0, 1): per entry softplus(x) - x·y =
	// log(1+e^-2), log(1+e^-1), log 2.
	x := arr{[]int{3}, []float64{2, -1, 0}}
	y := []float64{1, 0, 1}
	a, b, c := math.Log(1+math.Exp(-2)), math.Log(1+math.Exp(-1)), math.Log(2)
	for _, tc := range []struct {
		name   string
		logits arr
		labels []float64
		mask   []bool
		want   float64
	}{
		{"plain", x, y, nil, (a + b + c) / 3},
		{"masked", x, y, []bool{true, false, true}, (a + c) / 2},
		{"all masked", x, y, []bool{false, false, false}, 0},
		{"soft labels", arr{[]int{1}, []float64{1}}, []float64{0.25}, nil, math.Log(1+math.E) - 0.25},
		// Saturated logits must not overflow: softplus(1000) - 1000 = 0; softplus(-1000) = ~0
		// for y = 0, and 1000 for y = 1.
		{"saturated", arr{[]int{3}, []float64{1000, -1000, -1000}}, []float64{1, 0, 1}, nil, 1000.0 / 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			near(t, "BCE", mustLoss(t, bceGraph(tc.labels, tc.mask), tc.logits), tc.want, 1e-12)
		})
	}
}

func TestBCEWithLogitsGradient(t *testing.T) {
	// Includes x = 0, the kink of the stable form's max(x, 0) and |x|, where autodiff must
	// still give the exact σ(0) - y = -0.5 for y = 1.
	checkGrad(t, bceGraph([]float64{1, 0, 1, 0.3}, []bool{true, true, true, false}),
		arr{[]int{4}, []float64{0, 1.5, -2, 0.7}})
}
