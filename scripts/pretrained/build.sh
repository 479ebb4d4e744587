# Sourced by the scripts of this folder and of experiments/*/: the repository root as working
# directory, the Makefile's Go environment, and bin/toolret built with ONNX Runtime when it is
# installed (be: the backend to run on).
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export GOTOOLCHAIN=go1.27.4 GOEXPERIMENT=simd GOFLAGS=-buildvcs=false
be=go
tags=()
if [ -f "${TOOLRET_CACHE:-$HOME/.cache/toolret}/onnxruntime/libonnxruntime.so.1" ]; then be=onnx; tags=(-tags onnx); fi
mkdir -p bin
go build "${tags[@]}" -o bin/toolret ./cmd/toolret
