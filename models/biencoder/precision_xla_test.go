//go:build xla

package biencoder

import "testing"

// TestTrainBF16XLA runs checkTrainBF16 on XLA's CPU plugin; it skips when the plugin is absent.
func TestTrainBF16XLA(t *testing.T) { checkTrainBF16(t, "xla:cpu") }
