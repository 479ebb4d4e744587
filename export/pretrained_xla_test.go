//go:build xla

package export_test

import "testing"

// TestPretrainedParityXLA is TestPretrainedParity on XLA's CPU plugin.
func TestPretrainedParityXLA(t *testing.T) { pretrainedParity(t, "xla:cpu") }
