#!/usr/bin/env bash
# A seed ensemble of the imprinted MLC classifier from all-MiniLM-L6-v2 (issue #27 item 5):
# the 10-epoch recipe of docs/results/2026-11-26-every-kind-from-minilm.md trained once per seed
# on one dev split (the -first-stage run's), each seed's dev and test rankings (top 100) saved
# as OUT/mlc-sSEED.trec, then fused: zscore with the weights picked on dev, and RRF (equal, no
# tuning), each compared query by query with seed 1 alone and with every other member.
# A seed whose OUT/mlc-sSEED.trec is already there is not trained or ranked again (the GPU's
# seeds come back as such files: `bash scripts/gpu/device.sh seeds`, MLC_SEEDS="2 3").
# Usage: scripts/pretrained/mlc-seeds.sh [SEEDS]       (default "1 2 3")
# Environment: OUT (default runs/mlc-seeds: runs OUT/sSEED and the rankings), FIRST_STAGE (the
#   dev split's run, default runs/tl-minilm), INIT (default sentence-transformers/all-MiniLM-L6-v2),
#   TL (default ../shared/datasets/toollens). On this CPU one seed trains in about 1 h 54 min.
set -euo pipefail
source "$(dirname "$0")/build.sh"
seeds="${1:-1 2 3}"
out="${OUT:-runs/mlc-seeds}"
first="${FIRST_STAGE:-runs/tl-minilm}"
init="${INIT:-sentence-transformers/all-MiniLM-L6-v2}"
tl="${TL:-../shared/datasets/toollens}"
mkdir -p "$out"
log="$out/mlc-seeds.txt"
files=()
for s in $seeds; do
  f="$out/mlc-s$s.trec"
  files+=("$f")
  [ -s "$f" ] && continue
  run="$out/s$s"
  if [ ! -f "$run/summary.json" ]; then
    echo "== seed $s: training $run" | tee -a "$log"
    /usr/bin/time -f "peak RSS %M kB, wall %e s" -a -o "$log" \
      bin/toolret train classifier -kind mlc -loss softmax -data "$tl" -init "$init" -first-stage "$first" \
      -run "$run" -batch 64 -epochs 10 -lr 1e-4 -max-len 48 -seed "$s" -backend "$be" -pooling mean -head-init tools
  fi
  for split in dev test; do
    bin/toolret eval -data "$tl" -run "$run" -split "$split" -k 100 -backend "$be" -save-run "$f.$split" | tee -a "$log"
  done
  cat "$f.dev" "$f.test" >"$f.tmp" && mv "$f.tmp" "$f" && rm -f "$f.dev" "$f.test"
done
list() { local IFS=,; echo "$*"; }
echo "== seeds $seeds: each alone (test)" | tee -a "$log"
# A TREC file alone, scored as it ranks: RRF of one list keeps its order.
for f in "${files[@]}"; do
  bin/toolret eval -data "$tl" -method fusion -fusion rrf -runs "$f" | grep -E '^all' | sed "s|^|$(basename "$f") |" | tee -a "$log"
done
echo "== zscore, weights on dev (-first-stage $first's split)" | tee -a "$log"
bin/toolret eval -data "$tl" -method fusion -fusion zscore -weight dev -first-stage "$first" -runs "$(list "${files[@]}")" \
  -save-run "$out/ensemble-zscore.trec" -run-tag ensemble-zscore 2> >(grep -v " by weights " >>"$log") | tee -a "$log"
echo "== rrf (equal, untuned)" | tee -a "$log"
bin/toolret eval -data "$tl" -method fusion -fusion rrf -runs "$(list "${files[@]}")" \
  -save-run "$out/ensemble-rrf.trec" -run-tag ensemble-rrf | tee -a "$log"
for f in "${files[@]}"; do
  for e in zscore rrf; do
    echo "== $(basename "$f") against the $e ensemble (paired)" | tee -a "$log"
    bin/toolret eval -data "$tl" -compare "$f,$out/ensemble-$e.trec" | tee -a "$log"
  done
done
