//go:build onnx

package losses

import (
	"math"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/toolret/toolret/backend"
)

// TestLossesONNX runs every loss and its gradient on the ONNX Runtime backend and compares
// them with the go backend: training any model kind on -backend onnx needs every op here.
func TestLossesONNX(t *testing.T) {
	ob, err := backend.Open("onnx")
	if err != nil {
		t.Skip(err)
	}
	gb, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range lossCases() {
		t.Run(tc.name, func(t *testing.T) {
			// Loss and its gradient with respect to every input, flattened into one vector.
			fn := func(in []*Node) *Node {
				loss := tc.f(in)
				parts := []*Node{Reshape(loss, 1)}
				for _, g := range Gradient(loss, in...) {
					parts = append(parts, Reshape(g, g.Shape().Size()))
				}
				return Concatenate(parts, 0)
			}
			run := func(name string) []float32 {
				b := gb
				if name == "onnx" {
					b = ob
				}
				out, err := ExecOnce(b, fn, float32Args(tc.in)...)
				if err != nil {
					t.Fatalf("%s backend: %v", name, err)
				}
				return tensors.MustCopyFlatData[float32](out)
			}
			want, got := run("go"), run("onnx")
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*max(1, math.Abs(float64(want[i]))) || math.IsNaN(float64(got[i])) {
					t.Fatalf("entry %d (0 = loss, then gradients): onnx %g, go %g", i, got[i], want[i])
				}
			}
		})
	}
}
