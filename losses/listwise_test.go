package losses

import (
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
)

// listGraph builds f(scores, labels, mask) with constant labels and mask.
func listGraph(f func(scores, labels, mask *Node) *Node, labels [][]float64, mask [][]bool) lossGraph {
	return func(xs []*Node) *Node {
		g := xs[0].Graph()
		var m *Node
		if mask != nil {
			m = Const(g, mask)
		}
		return f(xs[0], Const(g, labels), m)
	}
}

func TestListwiseCEHandComputed(t *testing.T) {
	// Row 0: scores (1, 2, 3), labels (1, 0, 1): p = (½, 0, ½),
	//   loss = log(e + e² + e³) - (1 + 3)/2.
	// Row 1: scores (0, 1, 5), labels (0, 1, 1), mask (T, T, F): the padded positive is
	//   dropped, p = (0, 1), loss = log(1 + e) - 1.
	// Row 2: no positive: no weight.
	s := arr{[]int{3, 3}, []float64{1, 2, 3, 0, 1, 5, 4, 0, 0}}
	y := [][]float64{{1, 0, 1}, {0, 1, 1}, {0, 0, 0}}
	m := [][]bool{{true, true, true}, {true, true, false}, {true, true, true}}
	r0 := math.Log(math.E+math.Exp(2)+math.Exp(3)) - 2
	r1 := math.Log(1+math.E) - 1
	r1NoMask := math.Log(1+math.E+math.Exp(5)) - 3 // p = (0, ½, ½): lse - (1+5)/2.
	near(t, "masked", mustLoss(t, listGraph(ListwiseCE, y, m), s), (r0+r1)/2, 1e-12)
	near(t, "unmasked", mustLoss(t, listGraph(ListwiseCE, y, nil), s), (r0+r1NoMask)/2, 1e-12)
	none := [][]float64{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}
	near(t, "no positives", mustLoss(t, listGraph(ListwiseCE, none, nil), s), 0, 0)
}

func TestListwiseCEGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	y := [][]float64{{1, 0, 1, 0}, {0, 2, 1, 0}, {0, 0, 0, 0}}
	m := [][]bool{{true, true, true, true}, {true, true, true, false}, {true, true, true, true}}
	checkGrad(t, listGraph(ListwiseCE, y, m), randArr(rng, 3, 4))
}

func TestListLossesBoolLabels(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	s := randArr(rng, 2, 3)
	yf := [][]float64{{1, 0, 1}, {0, 1, 0}}
	yb := [][]bool{{true, false, true}, {false, true, false}}
	for name, f := range map[string]func(scores, labels, mask *Node) *Node{"ListwiseCE": ListwiseCE, "COLTListwise": COLTListwise} {
		withBool := func(xs []*Node) *Node { return f(xs[0], Const(xs[0].Graph(), yb), nil) }
		near(t, name, mustLoss(t, withBool, s), mustLoss(t, listGraph(f, yf, nil), s), 1e-15)
	}
}
