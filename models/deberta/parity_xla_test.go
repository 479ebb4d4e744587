//go:build xla

package deberta

import (
	"math"
	"testing"
)

// TestParityXLA runs the PyTorch parity on XLA's CPU plugin (`make install-xla`; the test
// skips without it) and checks it agrees with the go backend within parityTol.
func TestParityXLA(t *testing.T) {
	xla := checkParity(t, "xla:cpu")
	gob := checkParity(t, "go")
	for name, g := range gob {
		x := xla[name]
		if len(x) != len(g) {
			t.Fatalf("%s: %d vs %d values", name, len(x), len(g))
		}
		m := 0.0
		for i := range g {
			m = math.Max(m, math.Abs(float64(x[i]-g[i])))
		}
		t.Logf("%s: max |xla - go| = %.2e", name, m)
		if m > parityTol {
			t.Errorf("%s: xla and go differ by %.2e (> %.0e)", name, m, parityTol)
		}
	}
}
