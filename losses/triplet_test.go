package losses

import (
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
)

func tripletGraph(margin float64, dist Distance) lossGraph {
	return func(xs []*Node) *Node { return Triplet(xs[0], xs[1], xs[2], margin, dist) }
}

func TestTripletHandComputed(t *testing.T) {
	// Euclidean, margin 1: row 0 a=(0,0) p=(3,4) n=(1,0): max(0, 5-1+1) = 5;
	// row 1 a=(1,1) p=(1,2) n=(4,5): max(0, 1-5+1) = 0. Mean 2.5.
	ea := arr{[]int{2, 2}, []float64{0, 0, 1, 1}}
	ep := arr{[]int{2, 2}, []float64{3, 4, 1, 2}}
	en := arr{[]int{2, 2}, []float64{1, 0, 4, 5}}
	// Cosine, margin 0.2: row 0 a=(1,0) p=(1,1) n=(1,0.5):
	// max(0, (1-1/√2) - (1-1/√1.25) + 0.2); row 1 a=(0,1) p=(0,2) n=(1,0): max(0, 0-1+0.2) = 0.
	ca := arr{[]int{2, 2}, []float64{1, 0, 0, 1}}
	cp := arr{[]int{2, 2}, []float64{1, 1, 0, 2}}
	cn := arr{[]int{2, 2}, []float64{1, 0.5, 1, 0}}
	cos0 := (1 - 1/math.Sqrt2) - (1 - 1/math.Sqrt(1.25)) + 0.2
	// K = 2 negatives per anchor, Euclidean, margin 1: anchor (0,0), positive (0,2) (d=2),
	// negatives (0,1) (d=1): 2-1+1 = 2 and (3,0) (d=3): max(0, 2-3+1) = 0. Mean 1.
	ka := arr{[]int{1, 2}, []float64{0, 0}}
	kp := arr{[]int{1, 2}, []float64{0, 2}}
	kn := arr{[]int{1, 2, 2}, []float64{0, 1, 3, 0}}
	for _, tc := range []struct {
		name   string
		margin float64
		dist   Distance
		in     []arr
		want   float64
	}{
		{"euclidean", 1, DistEuclidean, []arr{ea, ep, en}, 2.5},
		{"cosine", 0.2, DistCosine, []arr{ca, cp, cn}, cos0 / 2},
		{"k-negatives", 1, DistEuclidean, []arr{ka, kp, kn}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			near(t, "Triplet", mustLoss(t, tripletGraph(tc.margin, tc.dist), tc.in...), tc.want, 1e-12)
		})
	}
}

func TestTripletGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dist := range []Distance{DistCosine, DistEuclidean} {
		t.Run(dist.String(), func(t *testing.T) {
			// A large margin keeps every hinge active, away from its kink.
			checkGrad(t, tripletGraph(3, dist), randArr(rng, 3, 3), randArr(rng, 3, 3), randArr(rng, 3, 2, 3))
		})
	}
}

func TestParseDistanceAndSimilarity(t *testing.T) {
	for _, s := range []string{"cosine", "Euclidean", "l2"} {
		if _, err := ParseDistance(s); err != nil {
			t.Errorf("ParseDistance(%q): %v", s, err)
		}
	}
	if _, err := ParseDistance("manhattan"); err == nil {
		t.Error("ParseDistance(manhattan) should fail")
	}
	for in, want := range map[string]Similarity{"cos": SimCosine, "DOT": SimDot} {
		if got, err := ParseSimilarity(in); err != nil || got != want {
			t.Errorf("ParseSimilarity(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseSimilarity("l1"); err == nil {
		t.Error("ParseSimilarity(l1) should fail")
	}
}
