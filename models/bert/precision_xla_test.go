//go:build xla

package bert

import "testing"

// TestBF16XLA runs checkBF16 on XLA's CPU plugin (bfloat16 emulated where the CPU lacks it).
// It skips, saying why, when the plugin is absent.
func TestBF16XLA(t *testing.T) { checkBF16(t, "xla:cpu") }
