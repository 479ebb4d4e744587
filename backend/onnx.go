//go:build onnx && linux && amd64

package backend

import (
	"bytes"

	"github.com/gomlx/compute"
	onnxbackend "github.com/gomlx/compute-onnx" // registers the "onnx" backend.
)

func init() {
	loadONNX = func(be compute.Backend, model []byte) (compute.Executable, error) {
		return onnxbackend.LoadModel(be, bytes.NewReader(model))
	}
}
