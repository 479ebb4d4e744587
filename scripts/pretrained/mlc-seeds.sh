#!/usr/bin/env bash
# A seed ensemble of the imprinted MLC classifier (issue #27 item 5): the 10-epoch recipe of
# docs/results/2026-11-26-every-kind-from-minilm.md trained once per entry on one dev split (the
# -first-stage run's), each member's dev and test rankings (top 100) saved as OUT/mlc-TAG.trec,
# then fused: zscore with the weights picked on dev, and RRF (equal, no tuning), each compared
# query by query with every member. An entry is SEED (pooling mean, tag sSEED) or POOLING:SEED
# (tag [NAME-]POOLING-sSEED). A member whose OUT/mlc-TAG.trec is already there, or whose
# OUT/mlc-TAG.dev.trec and .test.trec are (as `bash scripts/gpu/device.sh seeds|mlc` return them
# in its archives), is not trained or ranked again.
# Usage: scripts/pretrained/mlc-seeds.sh [ENTRIES]       (default "1 2 3")
# Environment: OUT (default runs/mlc-seeds: runs OUT/sTAG and the rankings), FIRST_STAGE (the
#   dev split's run, default runs/tl-minilm; made when missing by a one-step bi-encoder run with
#   seed 1 and dev 0.1, whose records are all that is read), INIT (default
#   sentence-transformers/all-MiniLM-L6-v2), NAME (the tag's model part, e.g. bge), TL (default
#   ../shared/datasets/toollens). On this CPU a MiniLM member trains in about 1 h 54 min.
# bge-small, as in docs/results/2026-11-28-bge-mlc.md:
#   NAME=bge INIT=BAAI/bge-small-en-v1.5 OUT=runs/bge-mlc scripts/pretrained/mlc-seeds.sh "cls:1 mean:1 cls:2"
set -euo pipefail
source "$(dirname "$0")/build.sh"
seeds="${1:-1 2 3}"
out="${OUT:-runs/mlc-seeds}"
first="${FIRST_STAGE:-runs/tl-minilm}"
init="${INIT:-sentence-transformers/all-MiniLM-L6-v2}"
tl="${TL:-../shared/datasets/toollens}"
mkdir -p "$out"
log="$out/mlc-seeds.txt"
if [ ! -f "$first/run.json" ]; then
  echo "== the dev split: $first (one step, seed 1, dev 0.1)" | tee -a "$log"
  bin/toolret train biencoder -data "$tl" -init sentence-transformers/all-MiniLM-L6-v2 -run "$first" -max-steps 1 \
    -batch 8 -seed 1 -dev 0.1 -backend "$be" -quiet >>"$log"
fi
files=()
for e in $seeds; do
  pool=mean s=$e t=s$e
  if [[ $e == *:* ]]; then pool=${e%%:*} s=${e#*:} t=${NAME:+$NAME-}$pool-s$s; fi
  f="$out/mlc-$t.trec"
  files+=("$f")
  [ -s "$f" ] && continue
  if [ -s "$out/mlc-$t.dev.trec" ] && [ -s "$out/mlc-$t.test.trec" ]; then
    cat "$out/mlc-$t.dev.trec" "$out/mlc-$t.test.trec" >"$f.tmp" && mv "$f.tmp" "$f"
    continue
  fi
  run="$out/$t"
  if [ ! -f "$run/summary.json" ]; then
    echo "== $t: training $run" | tee -a "$log"
    /usr/bin/time -f "peak RSS %M kB, wall %e s" -a -o "$log" \
      bin/toolret train classifier -kind mlc -loss softmax -data "$tl" -init "$init" -first-stage "$first" \
      -run "$run" -batch 64 -epochs 10 -lr 1e-4 -max-len 48 -seed "$s" -backend "$be" -pooling "$pool" -head-init tools
  fi
  for split in dev test; do
    bin/toolret eval -data "$tl" -run "$run" -split "$split" -k 100 -backend "$be" -save-run "$f.$split" | tee -a "$log"
  done
  cat "$f.dev" "$f.test" >"$f.tmp" && mv "$f.tmp" "$f" && rm -f "$f.dev" "$f.test"
done
list() { local IFS=,; echo "$*"; }
echo "== $seeds: each alone (test)" | tee -a "$log"
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
  for m in zscore rrf; do
    echo "== $(basename "$f") against the $m ensemble (paired)" | tee -a "$log"
    bin/toolret eval -data "$tl" -compare "$f,$out/ensemble-$m.trec" | tee -a "$log"
  done
done
