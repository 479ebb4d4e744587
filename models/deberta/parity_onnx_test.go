//go:build onnx

package deberta

import (
	"math"
	"testing"
)

// TestParityONNX runs the PyTorch parity on the onnx backend (ONNX Runtime executing the
// GoMLX graph) and checks it agrees with the go backend within parityTol.
func TestParityONNX(t *testing.T) {
	onnx := checkParity(t, "onnx")
	gob := checkParity(t, "go")
	for name, g := range gob {
		o := onnx[name]
		if len(o) != len(g) {
			t.Fatalf("%s: %d vs %d values", name, len(o), len(g))
		}
		m := 0.0
		for i := range g {
			m = math.Max(m, math.Abs(float64(o[i]-g[i])))
		}
		t.Logf("%s: max |onnx - go| = %.2e", name, m)
		if m > parityTol {
			t.Errorf("%s: onnx and go differ by %.2e (> %.0e)", name, m, parityTol)
		}
	}
}
