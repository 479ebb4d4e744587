//go:build xla

package bert

import "testing"

// xlaTol bounds XLA CPU's difference from the go backend and from PyTorch on the fixture.
const xlaTol = 1e-4

// TestParityXLA runs the PyTorch parity on XLA's CPU plugin and checks it agrees with the go
// backend within xlaTol. It skips, saying how to install the plugin, when it is absent.
func TestParityXLA(t *testing.T) {
	xla := checkParity(t, "xla:cpu", xlaTol)
	gob := checkParity(t, "go", parityTol)
	for p, g := range gob {
		x := xla[p]
		if len(x) != len(g) {
			t.Fatalf("%s: %d vs %d values", p, len(x), len(g))
		}
		m := 0.0
		for i := range g {
			if d := float64(x[i] - g[i]); d > m || -d > m {
				m = max(d, -d)
			}
		}
		t.Logf("%s: max |xla - go| = %.2e", p, m)
		if m > xlaTol {
			t.Errorf("%s: xla and go differ by %.2e (> %.0e)", p, m, xlaTol)
		}
	}
}
