//go:build xla

package losses

import "testing"

// TestLossesXLA runs every loss and its gradient on XLA's CPU plugin (`make install-xla`; the
// test skips without it) and compares them with the go backend.
func TestLossesXLA(t *testing.T) { checkLossesOn(t, "xla:cpu", 1e-5) }
