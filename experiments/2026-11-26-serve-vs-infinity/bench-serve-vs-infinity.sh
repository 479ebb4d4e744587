#!/usr/bin/env bash
# toolret serve and infinity (infinity-emb 0.0.78) side by side on this machine, serving the
# same sentence-transformers/all-MiniLM-L6-v2 from the HuggingFace hub cache (offline), loaded
# by one load generator (`toolret bench http`) in one run: POST /v1/embeddings, one text per
# request, at each concurrency, with ToolLens queries (short texts: rows `toolret`,
# `infinity`) and tool texts (long: `toolret-long`, `infinity-long`), and toolret's tool
# gateway POST /v1/search end to end (`toolret-search`; infinity has no search). Prints one
# row per system and concurrency under the header
#
#   SYSTEM CONCURRENCY QPS P50_MS P99_MS
#
# Both servers get the same threads (THREADS, default 2: this machine's cores): toolret
# GOMAXPROCS and ONNX Runtime's intra-op threads, infinity OMP_NUM_THREADS/MKL_NUM_THREADS
# (torch's intra-op threads). Both batch concurrent requests with their defaults (toolret
# -embed-batch 64 -embed-tokens 4096 -embed-wait 2ms; infinity --batch-size 32); neither
# caches embeddings (toolret -query-cache 0, infinity --no-vector-disk-cache); both log one
# line per request (their defaults), toolret to a file, infinity (uvicorn) to a file. Both
# are warmed up (WARMUP requests per endpoint and concurrency, after their own start-up
# warm-up) and then get REQUESTS timed requests with the same texts in the same order.
#
# Settings (environment): REQUESTS (500), WARMUP (100), CONCURRENCY (1,8,32), THREADS (2),
# BACKEND (toolret's -backend: onnx, or go), TOOLRET_ARGS (more serve flags),
# INFINITY_ENGINE (torch; see install-infinity.sh on optimum), LONG (1: also the long
# texts), DATA (../shared/datasets/toollens), OUT (a directory for the servers' logs),
# TOOLRET_BIN (a toolret binary to serve with, e.g. an older build; default: this checkout's;
# the load generator is always this checkout's).
# Installs infinity with scripts/install-infinity.sh (once) and ONNX Runtime with
# scripts/install-onnxruntime.sh. Run it alone on the machine (flock /work/heavy.lock ...).
set -euo pipefail
cd "$(dirname "$0")/../.."
REQUESTS="${REQUESTS:-500}"
WARMUP="${WARMUP:-100}"
CONCURRENCY="${CONCURRENCY:-1,8,32}"
THREADS="${THREADS:-2}"
BACKEND="${BACKEND:-onnx}"
TOOLRET_ARGS="${TOOLRET_ARGS:-}"
INFINITY_ENGINE="${INFINITY_ENGINE:-torch}"
LONG="${LONG:-1}"
DATA="${DATA:-../shared/datasets/toollens}"
MODEL=sentence-transformers/all-MiniLM-L6-v2
cache="${TOOLRET_CACHE:-$HOME/.cache/toolret}"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 DO_NOT_TRACK=1 GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.4}" GOEXPERIMENT="${GOEXPERIMENT:-simd}" GOFLAGS="${GOFLAGS:--buildvcs=false}"

py="$(scripts/install-infinity.sh)"
tags=""
be="$BACKEND"
if [ "$BACKEND" = onnx ]; then
  scripts/install-onnxruntime.sh >/dev/null
  tags="-tags onnx"
  be="onnx:cpu,intra_op_num_threads=$THREADS,inter_op_num_threads=1"
fi
bin="$OUT/toolret" # the load generator, and the server unless TOOLRET_BIN names another
go build $tags -o "$bin" ./cmd/toolret
server="${TOOLRET_BIN:-$bin}"

# The ToolLens tools as a tool library (a function list imported), for the gateway's /v1/search.
state="$cache/bench-infinity"
mkdir -p "$state"
"$py" - "$DATA/corpus.jsonl" "$state/toollens-functions.json" <<'EOF'
import json, sys
fns = [{"name": "toollens_" + t["_id"], "description": t["text"], "parameters": {"type": "object", "properties": {}}}
       for t in map(json.loads, open(sys.argv[1]))]
json.dump(fns, open(sys.argv[2], "w"))
EOF
"$bin" import -functions "$state/toollens-functions.json" -out "$state/toollens.jsonl" >/dev/null

tport="${TOOLRET_PORT:-18081}"
iport="${INFINITY_PORT:-17997}"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
GOMAXPROCS="$THREADS" "$server" serve -library "$state/toollens.jsonl" -model "$MODEL" -state "$state/toollens-$BACKEND.toolret" \
  -backend "$be" -addr "127.0.0.1:$tport" -query-cache 0 $TOOLRET_ARGS 2>"$OUT/toolret.log" &
pids+=($!)
OMP_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS" "$(dirname "$py")/infinity_emb" v2 --model-id "$MODEL" \
  --engine "$INFINITY_ENGINE" --device cpu --port "$iport" --url-prefix /v1 --no-vector-disk-cache >"$OUT/infinity.log" 2>&1 &
pids+=($!)

wait_up() { # name url pid
  for _ in $(seq 600); do
    curl -sf -o /dev/null "$2" && return 0
    kill -0 "$3" 2>/dev/null || { echo "bench-serve-vs-infinity: $1 exited; its log: $OUT/$1.log" >&2; tail -20 "$OUT/$1.log" >&2; exit 1; }
    sleep 1
  done
  echo "bench-serve-vs-infinity: $1 not up after 600 s" >&2
  exit 1
}
wait_up toolret "http://127.0.0.1:$tport/healthz" "${pids[0]}"
wait_up infinity "http://127.0.0.1:$iport/health" "${pids[1]}"

long=""
[ "$LONG" = 1 ] && long="-long"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); threads $THREADS each; toolret -backend $be $TOOLRET_ARGS; infinity $("$py" -c 'import importlib.metadata as m; print(m.version("infinity-emb"))') --engine $INFINITY_ENGINE (torch $("$py" -c 'import torch; print(torch.__version__)'))"
"$bin" bench http -data "$DATA" -model "$MODEL" -concurrency "$CONCURRENCY" -requests "$REQUESTS" -warmup "$WARMUP" $long \
  -embeddings "toolret=http://127.0.0.1:$tport/v1/embeddings" -embeddings "infinity=http://127.0.0.1:$iport/v1/embeddings" \
  -search "toolret-search=http://127.0.0.1:$tport/v1/search"
