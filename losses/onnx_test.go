//go:build onnx

package losses

import "testing"

// TestLossesONNX runs every loss and its gradient on the ONNX Runtime backend and compares
// them with the go backend: training any model kind on -backend onnx needs every op here.
func TestLossesONNX(t *testing.T) { checkLossesOn(t, "onnx", 1e-5) }
