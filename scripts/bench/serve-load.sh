#!/usr/bin/env bash
# serve-load.sh: the serving figures of docs/serve.md ("Load, soak and readiness") in one run,
# against the real `toolret serve` over an exported index (default: all-MiniLM-L6-v2 zero-shot
# over ToolLens's 464 tools, exported on first use):
#   first: first-request latency of each query length on a fresh server, -warmup 0 then the default;
#   load:  20,000 retrieve requests at concurrency 32 (errors, QPS, p50/p99);
#   soak:  then the same load for 10 minutes, the server's RSS, heap and goroutines every 10 s;
#   and after each server: SIGTERM, the time to exit and the exit code.
# It is a heavy job: run it under the machine's lock, e.g.
#   flock /work/heavy.lock scripts/bench/serve-load.sh
# Environment: INDEX (exports/minilm-toollens), MODEL (sentence-transformers/all-MiniLM-L6-v2),
# DATA (../shared/datasets/toollens), BACKEND (go), REQUESTS (20000), CONC (32), SOAK (10m),
# SAMPLE (10s), PHASES ("first load"; add soak), PORT (18181), OUT (runs/serve-load).
set -euo pipefail
# The Makefile's Go (this machine's own is older): go build below needs it.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.4} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOFLAGS=${GOFLAGS:--buildvcs=false}
cd "$(dirname "$0")/../.."
INDEX=${INDEX:-exports/minilm-toollens}
MODEL=${MODEL:-sentence-transformers/all-MiniLM-L6-v2}
DATA=${DATA:-../shared/datasets/toollens}
BACKEND=${BACKEND:-go}
REQUESTS=${REQUESTS:-20000}
CONC=${CONC:-32}
SOAK=${SOAK:-10m}
SAMPLE=${SAMPLE:-10s}
PHASES=${PHASES:-first load}
PORT=${PORT:-18181}
OUT=${OUT:-runs/serve-load}
WORDS=${WORDS:-4,10,16,22,32,45,70,95,140,190}
mkdir -p "$OUT" bin
go build -o bin/toolret ./cmd/toolret
if [ ! -f "$INDEX/manifest.json" ]; then
  bin/toolret export -model "$MODEL" -format index -data "$DATA" -out "$INDEX"
fi
URL=http://127.0.0.1:$PORT
echo "# $(date -u +%FT%TZ) $(uname -m), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); index $INDEX, backend $BACKEND"

PID=
start() { # start ARGS...: a server on a copy of the index, up to ready
  rm -rf "$OUT/index" && cp -r "$INDEX" "$OUT/index"
  local t0; t0=$(date +%s.%N)
  bin/toolret serve -index "$OUT/index" -addr 127.0.0.1:$PORT -backend "$BACKEND" "$@" 2>"$OUT/serve.log" &
  PID=$!
  until curl -sf "$URL/readyz" >/dev/null 2>&1; do
    kill -0 $PID 2>/dev/null || { cat "$OUT/serve.log"; exit 1; }
    sleep 0.05
  done
  local rss; rss=$(curl -s "$URL/metrics" | awk '/^process_resident_memory_bytes /{printf "%.0f", $2/1048576}')
  echo "serve ${*:-(default flags)}: ready $(echo "$(date +%s.%N) - $t0" | bc | cut -c1-5) s after start, RSS $rss MB; $(grep -o '"msg":"warmed up".*' "$OUT/serve.log" || echo 'no warm-up')"
}
stop() { # SIGTERM; report the time to exit and the exit code
  local t0 rc=0; t0=$(date +%s.%N)
  kill -TERM $PID
  wait $PID || rc=$?
  echo "SIGTERM: exit $rc after $(echo "$(date +%s.%N) - $t0" | bc | cut -c1-5) s; last log line: $(tail -n1 "$OUT/serve.log" | cut -c1-160)"
}

for phase in $PHASES; do
  case $phase in
  first)
    for w in 0 1; do
      start -warmup $w
      bin/toolret bench load -url "$URL" -data "$DATA" -first "$WORDS" -requests 0
      stop
    done;;
  load)
    start
    soak=""
    [[ " $PHASES " == *" soak "* ]] && soak="-soak $SOAK -sample $SAMPLE"
    bin/toolret bench load -url "$URL" -data "$DATA" -requests "$REQUESTS" -concurrency "$CONC" $soak
    stop;;
  soak) ;; # with load
  *) echo "unknown phase $phase"; exit 2;;
  esac
done
