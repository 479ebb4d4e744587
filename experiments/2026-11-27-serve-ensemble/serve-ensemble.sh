#!/usr/bin/env bash
# What an ensemble costs a server: `serve -index A` against `serve -index A -ensemble B[,C...]`
# on the same machine, one after the other: the peak resident memory and the latency of N
# ToolLens test queries sent one at a time (POST /v1/retrieve, k 5), p50 / p95 / mean.
# Usage: experiments/2026-11-27-serve-ensemble/serve-ensemble.sh INDEX_A INDEX_B[,INDEX_C...] [N]   (default N 300)
# Environment: BACKEND (default onnx), WEIGHTS (-ensemble-weights; default: none, RRF),
#   TL (default ../shared/datasets/toollens), PORT (default 8797).
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
a="$1" members="$2" n="${3:-300}"
tl="${TL:-../shared/datasets/toollens}"
port="${PORT:-8797}"
py="${TOOLRET_CACHE:-$HOME/.cache/toolret}/venv/bin/python"
[ -x "$py" ] || py=python3
measure() {
  local name=$1
  shift
  bin/toolret serve -index "$a" -backend "${BACKEND:-$be}" -addr "127.0.0.1:$port" "$@" 2>/tmp/serve-ensemble.log &
  local pid=$!
  for _ in $(seq 300); do curl -sf "localhost:$port/readyz" >/dev/null && break; sleep 1; done
  "$py" - "$port" "$tl" "$n" "$name" <<'PY'
import json, statistics, sys, time, urllib.request
port, tl, n, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
test = [l.split("\t")[0] for l in open(f"{tl}/qrels/test.tsv")][1:]
ids = list(dict.fromkeys(test))[:n]
text = {}
for l in open(f"{tl}/queries.jsonl"):
    q = json.loads(l)
    text[q["_id"]] = q["text"]
lat = []
for i in ids:
    body = json.dumps({"query": text[i], "k": 5}).encode()
    t = time.perf_counter()
    urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v1/retrieve", body, {"Content-Type": "application/json"})).read()
    lat.append((time.perf_counter() - t) * 1000)
lat.sort()
print(f"{name}: {len(lat)} queries, p50 {lat[len(lat)//2]:.1f} ms, p95 {lat[int(len(lat)*0.95)]:.1f} ms, mean {statistics.mean(lat):.1f} ms", end="")
PY
  awk '/VmHWM/{printf ", peak RSS %.0f MiB\n", $2/1024}' "/proc/$pid/status"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}
measure "one index ($a)"
extra=(-ensemble "$members")
[ -n "${WEIGHTS:-}" ] && extra+=(-ensemble-weights "$WEIGHTS")
measure "ensemble ($a + $members)" "${extra[@]}"
