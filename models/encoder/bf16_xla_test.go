//go:build xla

package encoder_test

import "testing"

// TestBF16EncodersXLA runs checkBF16Encoders on XLA's CPU plugin (bfloat16 emulated where the
// CPU lacks it). It skips, saying why, when the plugin is absent.
func TestBF16EncodersXLA(t *testing.T) { checkBF16Encoders(t, "xla:cpu") }
