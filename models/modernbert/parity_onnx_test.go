//go:build onnx

package modernbert

import (
	"testing"

	"github.com/toolret/toolret/internal/paritytest"
)

// TestParityONNX runs the transformers parity on ONNX Runtime (the onnx backend running
// ModernBERT's GoMLX graph) and checks it agrees with the go backend within parityTol.
func TestParityONNX(t *testing.T) {
	e := paritytest.Expected[expected](t)
	onnx := checkParity(t, "onnx", fixtureDir, e.Hidden, true)
	checkParity(t, "onnx", biasDir, e.BiasHidden, false)
	gob := checkParity(t, "go", fixtureDir, e.Hidden, true)
	m := 0.0
	for i := range gob {
		for j := range gob[i] {
			d := float64(onnx[i][j] - gob[i][j])
			m = max(m, d, -d)
		}
	}
	t.Logf("max |onnx - go| = %.2e", m)
	if m > parityTol {
		t.Errorf("onnx and go differ by %.2e (> %.0e)", m, parityTol)
	}
}
