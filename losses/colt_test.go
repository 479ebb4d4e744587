package losses

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refCOLT is COLTListwise in float64 loops (labels binary, mask may be nil).
func refCOLT(scores [][]float64, labels [][]float64, mask [][]bool) float64 {
	total, n := 0.0, 0
	for i, row := range scores {
		keep := make([]bool, len(row))
		pos := 0.0
		for l := range row {
			keep[l] = mask == nil || mask[i][l]
			if keep[l] {
				pos += labels[i][l]
			}
		}
		if pos == 0 {
			continue
		}
		z := lse(row, keep)
		loss := 0.0
		for l, s := range row {
			if !keep[l] {
				continue
			}
			p := labels[i][l] / pos
			q := math.Exp(s - z)
			loss -= p*math.Log(max(q, COLTEpsilon)) + (1-p)*math.Log(max(1-q, COLTEpsilon))
		}
		total += loss
		n++
	}
	if n == 0 {
		return 0
	}
	return total / float64(n)
}

func TestCOLTListwiseHandComputed(t *testing.T) {
	// Row 0: scores (0, ln 3, 0): p̂ = (0.2, 0.6, 0.2); labels (1, 1, 0): p = (½, ½, 0).
	//   loss = -[½ ln .2 + ½ ln .8 + ½ ln .6 + ½ ln .4 + ln .8].
	// Row 1: scores (0, ln 4, 99) with the last entry padding: p̂ = (0.2, 0.8); labels
	//   (0, 1, 1) → p = (0, 1): loss = -[ln(1-.2) + ln .8] = -2 ln .8.
	// Row 2: no positive, no weight.
	s := arr{[]int{3, 3}, []float64{0, math.Log(3), 0, 0, math.Log(4), 99, 1, 2, 3}}
	y := [][]float64{{1, 1, 0}, {0, 1, 1}, {0, 0, 0}}
	m := [][]bool{{true, true, true}, {true, true, false}, {true, true, true}}
	r0 := -(0.5*math.Log(.2) + 0.5*math.Log(.8) + 0.5*math.Log(.6) + 0.5*math.Log(.4) + math.Log(.8))
	r1 := -2 * math.Log(.8)
	near(t, "COLT", mustLoss(t, listGraph(COLTListwise, y, m), s), (r0+r1)/2, 1e-12)
	near(t, "COLT vs reference", (r0+r1)/2, refCOLT(s.rows(), y, m), 1e-12)

	// Clipping: scores (100, 0), labels (0, 1): p̂₁ = e^-100 and 1-p̂₀ ≈ e^-100 are both
	// clipped to ε, so loss = -2 ln ε.
	clip := arr{[]int{1, 2}, []float64{100, 0}}
	near(t, "COLT clipped", mustLoss(t, listGraph(COLTListwise, [][]float64{{0, 1}}, nil), clip),
		-2*math.Log(COLTEpsilon), 1e-9)
}

func TestCOLTListwiseMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	s := randArr(rng, 4, 5)
	y := [][]float64{{1, 0, 0, 1, 0}, {0, 1, 0, 0, 0}, {1, 1, 1, 0, 0}, {0, 0, 0, 0, 1}}
	m := [][]bool{
		{true, true, true, true, true}, {true, true, true, false, false},
		{true, true, true, true, false}, {true, true, true, true, false}, // row 3's positive is padding.
	}
	near(t, "masked", mustLoss(t, listGraph(COLTListwise, y, m), s), refCOLT(s.rows(), y, m), 1e-12)
	near(t, "unmasked", mustLoss(t, listGraph(COLTListwise, y, nil), s), refCOLT(s.rows(), y, nil), 1e-12)
}

func TestCOLTListwiseGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	y := [][]float64{{1, 0, 0, 1}, {0, 1, 0, 0}, {1, 1, 1, 0}}
	m := [][]bool{{true, true, true, true}, {true, true, true, false}, {true, true, true, true}}
	checkGrad(t, listGraph(COLTListwise, y, m), randArr(rng, 3, 4))
}
