//go:build onnx && linux && amd64

package backend

import _ "github.com/gomlx/compute-onnx" // registers the "onnx" backend.
