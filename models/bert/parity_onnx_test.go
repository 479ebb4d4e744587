//go:build onnx

package bert

import "testing"

// TestParityONNX runs the PyTorch parity on ONNX Runtime and checks it agrees with the go
// backend within parityTol.
func TestParityONNX(t *testing.T) {
	onnx := checkParity(t, "onnx", parityTol)
	gob := checkParity(t, "go", parityTol)
	for p, g := range gob {
		o := onnx[p]
		if len(o) != len(g) {
			t.Fatalf("%s: %d vs %d values", p, len(o), len(g))
		}
		m := 0.0
		for i := range g {
			if d := float64(o[i] - g[i]); d > m || -d > m {
				m = max(d, -d)
			}
		}
		t.Logf("%s: max |onnx - go| = %.2e", p, m)
		if m > parityTol {
			t.Errorf("%s: onnx and go differ by %.2e (> %.0e)", p, m, parityTol)
		}
	}
}
