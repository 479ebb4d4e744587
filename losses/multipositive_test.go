package losses

import (
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
)

func multiPositive(normalised bool) func(scores, labels, mask *Node) *Node {
	return func(scores, labels, mask *Node) *Node { return MultiPositiveCE(scores, labels, mask, normalised) }
}

func TestMultiPositiveCEHandComputed(t *testing.T) {
	// Row 0: scores (1, 2, 3), positives {0, 2}: log q_0 + log q_2 = (1 + 3) - 2·lse,
	//   lse = log(e + e² + e³).
	// Row 1: scores (0, 1, 5), positives {1, 2}, mask (T, T, F): the padded positive is
	//   dropped, one positive: lse' - 1 with lse' = log(1 + e).
	// Row 2: no positive: no weight.
	s := arr{[]int{3, 3}, []float64{1, 2, 3, 0, 1, 5, 4, 0, 0}}
	y := [][]float64{{1, 0, 1}, {0, 1, 1}, {0, 0, 0}}
	m := [][]bool{{true, true, true}, {true, true, false}, {true, true, true}}
	lse := math.Log(math.E + math.Exp(2) + math.Exp(3))
	lse1 := math.Log(1 + math.E)
	tests := []struct {
		name       string
		normalised bool
		mask       [][]bool
		want       float64
	}{
		{"summed masked", false, m, ((2*lse - 4) + (lse1 - 1)) / 2},
		{"normalised masked", true, m, ((2*lse-4)/2 + (lse1 - 1)) / 2},
		{"summed unmasked", false, nil, ((2*lse - 4) + 2*math.Log(1+math.E+math.Exp(5)) - 6) / 2},
	}
	for _, tc := range tests {
		got := mustLoss(t, listGraph(multiPositive(tc.normalised), y, tc.mask), s)
		near(t, tc.name, got, tc.want, 1e-12)
	}
	// The normalised variant is ListwiseCE with 0/1 labels.
	near(t, "normalised = ListwiseCE", mustLoss(t, listGraph(multiPositive(true), y, m), s),
		mustLoss(t, listGraph(ListwiseCE, y, m), s), 1e-15)
}

func TestMultiPositiveCEGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	y := [][]float64{{1, 0, 1, 0}, {0, 1, 1, 0}, {0, 0, 0, 0}}
	m := [][]bool{{true, true, true, true}, {true, true, true, false}, {true, true, true, true}}
	for _, norm := range []bool{false, true} {
		checkGrad(t, listGraph(multiPositive(norm), y, m), randArr(rng, 3, 4))
	}
}
