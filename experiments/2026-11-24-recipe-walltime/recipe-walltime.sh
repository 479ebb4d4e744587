#!/bin/bash
# Wall time of the ToolLens recipe (README, "ToolLens from scratch") with fixed padding
# (-pad-multiple 0: every batch padded to -query-len/-tool-len, as before #18) and with the
# default bucketed padding (-pad-multiple 16), for each seed in $SEEDS. The two runs of a seed
# run side by side, one ONNX Runtime thread each, so they share the machine alike; give it an
# otherwise idle machine. Prints each run's wall time, steps and test metrics.
# Usage: experiments/2026-11-24-recipe-walltime/recipe-walltime.sh        (B=bin RUNS=runs/walltime SEEDS="1 2")
# Needs a -tags onnx build of cmd/toolret in $B (go build -tags onnx -o bin/toolret ./cmd/toolret).
set -euo pipefail
# The Makefile's Go (this machine's own is older): go build below needs it.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.4} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOFLAGS=${GOFLAGS:--buildvcs=false}
TL=${TL:-../shared/datasets/toollens}
B=${B:-bin}
R=${RUNS:-runs/walltime}
SEEDS=${SEEDS:-1 2}
RECIPE="-data $TL -backend onnx:cpu,intra_threads=1 -layers 2 -hidden 192 -heads 4 -epochs 5 -batch 64 -lr 1e-3 -symmetric -quiet"
mkdir -p $R
for s in $SEEDS; do
  for p in 0 16; do
    rm -rf $R/s$s-pad$p
    ( start=$(date +%s.%N)
      $B/toolret train biencoder $RECIPE -seed $s -pad-multiple $p -run $R/s$s-pad$p > $R/s$s-pad$p.log 2>&1
      echo "seconds $(echo "$(date +%s.%N) - $start" | bc)" >> $R/s$s-pad$p.log ) &
  done
  wait
done
for s in $SEEDS; do
  for p in 0 16; do
    python3 - "$R/s$s-pad$p" <<'PY'
import json, sys
d = sys.argv[1]
secs = [l.split()[1] for l in open(d + ".log") if l.startswith("seconds")][0]
steps = [json.loads(l) for l in open(d + "/metrics.jsonl")][-1].get("step")
m = json.load(open(d + "/test_metrics.json"))["text"]
print(f"{d}: {float(secs)/60:.1f} min, last step {steps}; test R@1/R@3/R@5/N@5/C@5 "
      + " / ".join(f"{m[k]:.2f}" for k in ["recall@1", "recall@3", "recall@5", "ndcg@5", "comp@5"]))
PY
  done
done
