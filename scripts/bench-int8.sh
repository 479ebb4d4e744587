#!/usr/bin/env bash
# int8 weights (export -quantize int8) against fp32 for sentence-transformers/all-MiniLM-L6-v2
# zero-shot, both on the onnx backend with THREADS intra-op threads, in one run:
#
#  quality  eval -model on ToolLens test (DATA) fp32, int8 (per channel) and int8-tensor, each
#           saving its ranking; eval -compare fp32,int8 (paired bootstrap interval and
#           randomization p) on R@5 and N@5; cosine between fp32 and int8 embeddings of every
#           tool text (encode -pooling mean, as the model's sentence-transformers config pools).
#           BFCL=1 adds BFCL test (../shared/datasets/bfcl) fp32 vs int8.
#  speed    the int8 Go benchmark (export/quantize_onnx_test.go BenchmarkEmbedInt8): texts/s
#           for short (queries) and long (tool texts) inputs, fp32 and int8, same process.
#  serving  two servers (serve -index, fp32 and int8 indexes of ToolLens' tools) loaded by one
#           load generator (bench http: /v1/embeddings, one text per request, concurrency
#           CONCURRENCY, short and long texts), then each server's peak RSS (VmHWM).
#
# Writes everything under OUT (runs/int8). Run it alone on the machine:
#   flock /work/heavy.lock scripts/bench-int8.sh
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS="${THREADS:-2}"
DATA="${DATA:-../shared/datasets/toollens}"
OUT="${OUT:-runs/int8}"
REQUESTS="${REQUESTS:-300}"
CONCURRENCY="${CONCURRENCY:-1,8}"
MODEL=sentence-transformers/all-MiniLM-L6-v2
export HF_HUB_OFFLINE=1 GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.4}" GOEXPERIMENT="${GOEXPERIMENT:-simd}" GOFLAGS="${GOFLAGS:--buildvcs=false}"
export GOMAXPROCS="$THREADS"
mkdir -p "$OUT"
scripts/install-onnxruntime.sh >/dev/null
bin="$OUT/toolret"
go build -tags onnx -o "$bin" ./cmd/toolret
be="onnx:cpu,intra_op_num_threads=$THREADS,inter_op_num_threads=1"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); -backend $be"

if [ "${QUALITY:-1}" = 1 ]; then
  for q in none int8 int8-tensor; do
    echo "## ToolLens test, $MODEL zero-shot, -quantize $q"
    /usr/bin/time -f "eval $q: %e s, peak RSS %M KB" "$bin" eval -data "$DATA" -model "$MODEL" -backend "$be" -quantize "$q" -cutoffs 5,10 -save-run "$OUT/toollens-$q.run"
  done
  for q in int8 int8-tensor; do
    echo "## paired comparison fp32 (A) vs $q (B), ToolLens test"
    "$bin" eval -data "$DATA" -compare "$OUT/toollens-none.run,$OUT/toollens-$q.run" -cutoffs 5
  done
  python3 - "$DATA/corpus.jsonl" "$OUT/tools.jsonl" <<'EOF'
import json, sys
with open(sys.argv[2], "w") as f:
    for t in map(json.loads, open(sys.argv[1])):
        f.write(json.dumps({"text": t["text"]}) + "\n")
EOF
  for q in none int8 int8-tensor; do
    "$bin" encode -model "$MODEL" -in "$OUT/tools.jsonl" -out "$OUT/tools-$q.jsonl" -pooling mean -max-len 256 -backend "$be" -quantize "$q"
  done
  python3 - "$OUT" <<'EOF'
import json, math, sys
out = sys.argv[1]
def load(q):
    return [json.loads(l)["embedding"] for l in open(f"{out}/tools-{q}.jsonl")]
ref = load("none")
for q in ("int8", "int8-tensor"):
    cs = []
    for a, b in zip(ref, load(q)):
        ab = sum(x * y for x, y in zip(a, b))
        cs.append(ab / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b)))
    print(f"cosine fp32 vs {q} over {len(cs)} ToolLens tool texts: min {min(cs):.4f} mean {sum(cs)/len(cs):.4f} max {max(cs):.4f}")
EOF
  if [ "${BFCL:-0}" = 1 ]; then
    for q in none int8; do
      echo "## BFCL test, -quantize $q"
      "$bin" eval -data ../shared/datasets/bfcl -model "$MODEL" -backend "$be" -quantize "$q" -cutoffs 5,10 -save-run "$OUT/bfcl-$q.run"
    done
    "$bin" eval -data ../shared/datasets/bfcl -compare "$OUT/bfcl-none.run,$OUT/bfcl-int8.run" -cutoffs 5
  fi
fi

if [ "${SPEED:-1}" = 1 ]; then
  echo "## encode speed (go test -bench EmbedInt8, $THREADS threads)"
  TOOLRET_BENCH_BACKEND="$be" go test -tags onnx -run '^$' -bench 'EmbedInt8' -benchtime "${BENCHTIME:-3x}" ./export/ | grep -E 'Benchmark|ok'
fi

if [ "${SERVE:-1}" = 1 ]; then
  for q in none int8; do
    [ -f "$OUT/index-$q/manifest.json" ] || "$bin" export -model "$MODEL" -format index -data "$DATA" -out "$OUT/index-$q" -force -backend "$be" -quantize "$q" 2>/dev/null
  done
  pids=()
  trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
  "$bin" serve -index "$OUT/index-none" -backend "$be" -addr 127.0.0.1:18091 -query-cache 0 2>"$OUT/serve-none.log" &
  pids+=($!)
  "$bin" serve -index "$OUT/index-int8" -backend "$be" -addr 127.0.0.1:18092 -query-cache 0 2>"$OUT/serve-int8.log" &
  pids+=($!)
  for port in 18091 18092; do
    for _ in $(seq 300); do curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && break; sleep 1; done
  done
  echo "## /v1/embeddings, one load generator, fp32 and int8 servers (each GOMAXPROCS $THREADS, $THREADS ORT threads)"
  "$bin" bench http -data "$DATA" -model "$MODEL" -concurrency "$CONCURRENCY" -requests "$REQUESTS" -warmup 50 -long \
    -embeddings "toolret-fp32=http://127.0.0.1:18091/v1/embeddings" -embeddings "toolret-int8=http://127.0.0.1:18092/v1/embeddings"
  for i in 0 1; do
    echo "peak RSS $( [ $i = 0 ] && echo fp32 || echo int8 ) server: $(grep VmHWM /proc/${pids[$i]}/status | awk '{print $2, $3}')"
  done
fi
