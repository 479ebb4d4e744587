#!/usr/bin/env bash
# Step time of `toolret train biencoder` on XLA's CPU plugin with each batch split over
# 1, 2 and 4 host devices (-devices), at the same global batch: all-MiniLM-L6-v2 fine-tuned,
# batch 32, queries padded to 32 tokens and tools to 64 (-pad-multiple 0: one input shape).
# Step 1 includes the compilation; the s/step column is the median of steps 2..STEPS.
#
#   experiments/2026-11-26-devices-xla-cpu/bench-devices.sh            # STEPS=6 DEVICES="1 2 4" MODEL=... OUT=runs/...
#
# Needs `make install-xla` and the model in the hub cache (`make models`).
set -euo pipefail
export GOTOOLCHAIN=go1.27.4 GOEXPERIMENT=simd GOFLAGS=-buildvcs=false
STEPS=${STEPS:-6}
DEVICES=${DEVICES:-"1 2 4"}
MODEL=${MODEL:-sentence-transformers/all-MiniLM-L6-v2}
OUT=${OUT:-runs/bench-devices-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT" bin
go build -tags xla -o bin/toolret-xla ./cmd/toolret
max=0
for n in $DEVICES; do ((n > max)) && max=$n; done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %-10s %-9s %-12s %s\n' devices 's/step' 'step 1 s' 'examples/s' 'loss steps 1..'
for n in $DEVICES; do
	run="$OUT/devices$n"
	bin/toolret-xla train biencoder -init "$MODEL" -backend "xla:cpu,devices=$max" -devices "$n" \
		-batch 32 -query-len 32 -tool-len 64 -pad-multiple 0 -max-steps "$STEPS" -test "" -quiet \
		-run "$run" >"$run.log" 2>&1 || { echo "devices $n failed: see $run.log"; tail -5 "$run.log"; exit 1; }
	python3 - "$run/metrics.jsonl" "$n" <<'PY'
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
secs = [32 / r["examples_per_sec"] for r in recs]
losses = " ".join(f'{r["loss"]:.4f}' for r in recs)
print(f'{sys.argv[2]:<8} {statistics.median(secs[1:]):<10.2f} {secs[0]:<9.1f} {32 / statistics.median(secs[1:]):<12.1f} {losses}')
PY
done
echo "runs and logs: $OUT"
