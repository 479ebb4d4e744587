package losses

import (
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
)

func crossViewGraph(tau float64, symmetric bool) lossGraph {
	return func(xs []*Node) *Node { return CrossViewInfoNCE(xs[0], xs[1], tau, symmetric) }
}

func TestCrossViewInfoNCEHandComputed(t *testing.T) {
	// a = (1,0), (0,1); b = (2,0), (1,1); cosines [[1, 1/√2], [0, 1/√2]]; τ = 0.5 doubles them:
	// logits [[2, √2], [0, √2]].
	// a→b: (log(e² + e^√2) - 2 + log(1 + e^√2) - √2) / 2.
	// b→a (columns): (log(e² + 1) - 2 + log(2e^√2) - √2) / 2.
	a := arr{[]int{2, 2}, []float64{1, 0, 0, 1}}
	b := arr{[]int{2, 2}, []float64{2, 0, 1, 1}}
	r2 := math.Sqrt2
	ab := (math.Log(math.Exp(2)+math.Exp(r2)) - 2 + math.Log(1+math.Exp(r2)) - r2) / 2
	ba := (math.Log(math.Exp(2)+1) - 2 + math.Log(2)) / 2
	near(t, "one-way", mustLoss(t, crossViewGraph(0.5, false), a, b), ab, 1e-12)
	near(t, "symmetric", mustLoss(t, crossViewGraph(0.5, true), a, b), (ab+ba)/2, 1e-12)
}

func TestCrossViewInfoNCEGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, sym := range []bool{false, true} {
		checkGrad(t, crossViewGraph(0.2, sym), randArr(rng, 3, 2), randArr(rng, 3, 2))
	}
}
