package losses

import (
	"math"
	"testing"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/toolret/toolret/backend"
)

// checkLossesOn runs every loss and its gradient on backend name (skipping when it cannot be
// opened) and compares them with the go backend within tol relative (absolute below 1):
// training any model kind on that backend needs every op here.
func checkLossesOn(t *testing.T, name string, tol float64) {
	ob, err := backend.Open(name)
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
			run := func(b compute.Backend, bn string) []float32 {
				out, err := ExecOnce(b, fn, float32Args(tc.in)...)
				if err != nil {
					t.Fatalf("%s backend: %v", bn, err)
				}
				return tensors.MustCopyFlatData[float32](out)
			}
			want, got := run(gb, "go"), run(ob, name)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > tol*max(1, math.Abs(float64(want[i]))) || math.IsNaN(float64(got[i])) {
					t.Fatalf("entry %d (0 = loss, then gradients): %s %g, go %g", i, name, got[i], want[i])
				}
			}
		})
	}
}
