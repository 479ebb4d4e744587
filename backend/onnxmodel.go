package backend

import (
	"fmt"

	"github.com/gomlx/compute"
)

// loadONNX compiles a serialized ONNX model on an ONNX Runtime backend; set by onnx.go in
// builds with -tags onnx.
var loadONNX func(be compute.Backend, model []byte) (compute.Executable, error)

// RunsONNX reports whether be runs serialized ONNX models (LoadONNX): the onnx backend of a
// binary built with -tags onnx.
func RunsONNX(be compute.Backend) bool {
	return loadONNX != nil && be != nil && (be.Name() == "onnxruntime" || be.Name() == "onnx")
}

// LoadONNX compiles the serialized ONNX model on be, which must be the onnx backend: what
// runs models GoMLX cannot build as graphs of its own, such as int8 weights with dynamically
// quantized activations (export.Quantization). The error names the backend to use.
func LoadONNX(be compute.Backend, model []byte) (compute.Executable, error) {
	if !RunsONNX(be) {
		name := "none"
		if be != nil {
			name = be.Name()
		}
		if loadONNX == nil {
			return nil, fmt.Errorf("backend %s cannot run an ONNX model: use -backend onnx (%s)", name, missingHint("onnx"))
		}
		return nil, fmt.Errorf("backend %s cannot run an ONNX model: use -backend onnx", name)
	}
	return loadONNX(be, model)
}
