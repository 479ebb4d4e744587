//go:build xla

package mpnet

import "testing"

// TestBF16XLA runs checkBF16 on XLA's CPU plugin; it skips when the plugin is absent.
func TestBF16XLA(t *testing.T) { checkBF16(t, "xla:cpu") }
