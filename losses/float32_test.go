package losses

import (
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/toolret/toolret/backend"
)

// TestFloat32 checks every loss runs in float32 (the training dtype), returns a float32
// scalar and agrees with the float64 value.
func TestFloat32(t *testing.T) {
	b, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range lossCases() {
		t.Run(tc.name, func(t *testing.T) {
			want := mustLoss(t, tc.f, tc.in...)
			out, err := ExecOnce(b, (func([]*Node) *Node)(tc.f), float32Args(tc.in)...)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := out.Value().(float32)
			if !ok {
				t.Fatalf("float32 inputs gave %s, want a float32 scalar", out.Shape())
			}
			if math.Abs(float64(got)-want) > 1e-5*max(1, math.Abs(want)) {
				t.Errorf("float32 %g, float64 %g", got, want)
			}
		})
	}
}

// lossCase is one loss on fixed random inputs.
type lossCase struct {
	name string
	f    lossGraph
	in   []arr
}

// lossCases covers every loss of the package.
func lossCases() []lossCase {
	rng := rand.New(rand.NewPCG(15, 16))
	labels := [][]float64{{1, 0, 1, 0}, {0, 1, 0, 0}, {0, 0, 0, 1}}
	listMask := [][]bool{{true, true, true, true}, {true, true, false, false}, {true, true, true, true}}
	mask := randMask(rng, 3, 9)
	return []lossCase{
		{"InfoNCE", infoNCEGraph(mask, InfoNCEConfig{Temperature: 0.05, Symmetric: true}), []arr{randArr(rng, 3, 4), randArr(rng, 3, 4), randArr(rng, 3, 2, 4)}},
		{"Triplet", tripletGraph(0.5, DistEuclidean), []arr{randArr(rng, 3, 4), randArr(rng, 3, 4), randArr(rng, 3, 4)}},
		{"BCEWithLogits", bceGraph([]float64{1, 0, 1, 0}, nil), []arr{randArr(rng, 4)}},
		{"ListwiseCE", listGraph(ListwiseCE, labels, listMask), []arr{randArr(rng, 3, 4)}},
		{"COLTListwise", listGraph(COLTListwise, labels, listMask), []arr{randArr(rng, 3, 4)}},
		{"CrossViewInfoNCE", crossViewGraph(0.1, false), []arr{randArr(rng, 3, 4), randArr(rng, 3, 4)}},
	}
}

// float32Args converts test inputs to float32 tensors.
func float32Args(in []arr) []any {
	args := make([]any, len(in))
	for i, a := range in {
		f32 := make([]float32, len(a.data))
		for j, v := range a.data {
			f32[j] = float32(v)
		}
		args[i] = tensors.FromFlatDataAndDimensions(f32, a.dims...)
	}
	return args
}
