# Sourced by the scripts of this folder and of experiments/*/: the repository root as working
# directory, the Makefile's Go environment, and bin/toolret built with ONNX Runtime when it is
# installed (be: the backend to run on).
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export GOTOOLCHAIN=go1.27.4 GOEXPERIMENT=simd GOFLAGS=-buildvcs=false
# evalrow FILE METRIC...: the "all" row of an `eval` table in FILE, as "METRIC value" pairs.
evalrow() {
  python3 - "$@" <<'PY'
import sys
t = open(sys.argv[1]).read().splitlines()
head = next(l for l in t if l.strip().startswith("queries")).split()
row = next(l for l in t if l.startswith("all")).split()[1:]
print("  ".join(f"{k} {row[head.index(k)]}" for k in sys.argv[2:]))
PY
}
be=go
tags=()
if [ -f "${TOOLRET_CACHE:-$HOME/.cache/toolret}/onnxruntime/libonnxruntime.so.1" ]; then be=onnx; tags=(-tags onnx); fi
mkdir -p bin
go build "${tags[@]}" -o bin/toolret ./cmd/toolret
