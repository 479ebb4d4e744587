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
# PREBUILT=1: use bin/toolret as it is (a machine with no Go toolchain, e.g. scripts/gpu/device.sh's);
# BACKEND: the backend to run on instead of the one picked above.
if [ "${PREBUILT:-0}" = 1 ]; then
  [ -x bin/toolret ] || { echo "build.sh: PREBUILT=1 but bin/toolret is missing" >&2; exit 1; }
else
  mkdir -p bin
  go build "${tags[@]}" -o bin/toolret ./cmd/toolret
fi
be="${BACKEND:-$be}"
