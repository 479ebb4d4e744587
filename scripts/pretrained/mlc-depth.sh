#!/usr/bin/env bash
# What depth buys the imprinted MLC (issue #27 item 5, docs/results/2026-11-26-every-kind-from-minilm.md,
# "A shallower encoder"): all-MiniLM-L6-v2 pruned to LAYERS (`export -keep-layers`), then the
# 10-epoch imprinted MLC recipe of that page on it (same dev split, seed 1), ranked, compared
# query by query with the 6-layer run's test rankings, and the pruned model's zero-shot row.
# Usage: scripts/pretrained/mlc-depth.sh [LAYERS] [OUT]     (default 0,2,4 and runs/mlc-l3)
# Environment: BASE, the 6-layer run's rankings (default runs/gpu-seeds/mlc-s1.trec, written by
#   scripts/pretrained/mlc-seeds.sh); FIRST_STAGE (default runs/tl-minilm). About 68 min on 2 cores.
set -euo pipefail
source "$(dirname "$0")/build.sh"
layers="${1:-0,2,4}"
out="${2:-runs/mlc-l3}"
base="${BASE:-runs/gpu-seeds/mlc-s1.trec}"
first="${FIRST_STAGE:-runs/tl-minilm}"
tl=../shared/datasets/toollens
mkdir -p "$out"
[ -d "$out/model" ] || bin/toolret export -model sentence-transformers/all-MiniLM-L6-v2 -keep-layers "$layers" -out "$out/model"
if [ ! -f "$out/s1/summary.json" ]; then
  /usr/bin/time -f "peak RSS %M kB, wall %e s" -a -o "$out/log.txt" \
    bin/toolret train classifier -kind mlc -loss softmax -data $tl -init "$out/model" -first-stage "$first" \
    -run "$out/s1" -batch 64 -epochs 10 -lr 1e-4 -max-len 48 -seed 1 -backend $be -pooling mean -head-init tools
fi
for split in dev test; do
  bin/toolret eval -data $tl -run "$out/s1" -split $split -k 100 -backend $be -save-run "$out/mlc.trec.$split" | tee -a "$out/log.txt"
done
cat "$out/mlc.trec.dev" "$out/mlc.trec.test" >"$out/mlc.trec" && rm -f "$out/mlc.trec.dev" "$out/mlc.trec.test"
if [ -s "$base" ]; then
  bin/toolret eval -data $tl -compare "$base,$out/mlc.trec" | tee -a "$out/log.txt"
else
  echo "mlc-depth: no paired comparison: $base (the 6-layer rankings) is missing; scripts/pretrained/mlc-seeds.sh 1 writes it" | tee -a "$out/log.txt" >&2
fi
echo "== zero-shot, the pruned model" | tee -a "$out/log.txt"
bin/toolret eval -model "$out/model" -data $tl -backend $be | tee -a "$out/log.txt"
