//go:build onnx

package export_test

import "testing"

// TestPretrainedParityONNX is TestPretrainedParity on ONNX Runtime.
func TestPretrainedParityONNX(t *testing.T) { pretrainedParity(t, "onnx") }
