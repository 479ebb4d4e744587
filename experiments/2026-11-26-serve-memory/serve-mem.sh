#!/usr/bin/env bash
# serve-mem.sh: the go backend's serving memory and encode speed, this checkout's toolret
# against another build (BASE_BIN, e.g. one built from the commit before a change), in one run:
# for each binary, `toolret serve` over the exported all-MiniLM-L6-v2 ToolLens index
# (default flags: warm-up and dynamic batching on), `toolret bench load -requests REQUESTS
# -concurrency 32` (ToolLens queries), and the server's RSS before and after the load; then
# `toolret bench encode -backend go` (texts/s, random MiniLM-sized encoder, 500 ToolLens
# queries) with each binary, alternating, ROUNDS times. A heavy job:
#   flock /work/heavy.lock env BASE_BIN=/tmp/toolret-base experiments/2026-11-26-serve-memory/serve-mem.sh
# Environment: BASE_BIN (required), INDEX (exports/minilm-toollens), DATA
# (../shared/datasets/toollens), REQUESTS (4000), ROUNDS (2), PORT (18191), OUT (runs/serve-mem).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${BASE_BIN:?set BASE_BIN to the toolret binary to compare with}"
INDEX=${INDEX:-exports/minilm-toollens}
DATA=${DATA:-../shared/datasets/toollens}
REQUESTS=${REQUESTS:-4000}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-18191}
OUT=${OUT:-runs/serve-mem}
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.4}" GOEXPERIMENT="${GOEXPERIMENT:-simd}" GOFLAGS="${GOFLAGS:--buildvcs=false}"
mkdir -p "$OUT" bin
go build -o bin/toolret ./cmd/toolret
if [ ! -f "$INDEX/manifest.json" ]; then
  bin/toolret export -model sentence-transformers/all-MiniLM-L6-v2 -format index -data "$DATA" -out "$INDEX"
fi
URL=http://127.0.0.1:$PORT
echo "# $(date -u +%FT%TZ) $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); base $BASE_BIN, new bin/toolret (this checkout)"
for which in base new; do
  bin=bin/toolret
  [ $which = base ] && bin=$BASE_BIN
  rm -rf "$OUT/index" && cp -r "$INDEX" "$OUT/index"
  "$bin" serve -index "$OUT/index" -addr 127.0.0.1:$PORT -backend go 2>"$OUT/serve-$which.log" &
  pid=$!
  until curl -sf "$URL/readyz" >/dev/null 2>&1; do
    kill -0 $pid 2>/dev/null || { cat "$OUT/serve-$which.log"; exit 1; }
    sleep 0.05
  done
  echo "== $which: serve (go backend, default flags)"
  bin/toolret bench load -url "$URL" -data "$DATA" -requests "$REQUESTS" -concurrency 32
  kill -TERM $pid
  wait $pid || true
done
for r in $(seq "$ROUNDS"); do
  for which in base new; do
    bin=bin/toolret
    [ $which = base ] && bin=$BASE_BIN
    echo "== $which: bench encode -backend go (round $r)"
    /usr/bin/time -f "peak RSS %M kB" "$bin" bench encode -backend go -queries 500 -python '' 2>&1 | grep -E "^encode|toolret-go|peak RSS" || true
  done
done
