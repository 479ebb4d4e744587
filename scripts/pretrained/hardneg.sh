#!/usr/bin/env bash
# Issue #27 item 5, the bi-encoder's second round: hard negatives mined by a fine-tuned
# bi-encoder (stage 1, the README's 150-step MiniLM recipe by default), then the same recipe
# trained again from the pre-trained model with one mined negative per example, and both
# compared on the test split (eval -compare, paired). Writes RUN_HN (the run; its log beside
# it with /usr/bin/time -v's peak memory), OUT/{stage1,hn}.trec and OUT/compare.txt.
# Usage: scripts/pretrained/hardneg.sh       (needs `make models` and the stage-1 run)
# Environment: MODEL (default sentence-transformers/all-MiniLM-L6-v2), STAGE1 (default
#   runs/tl-minilm), RUN_HN (default runs/tl-minilm-hn), STEPS (default 150), SKIP (top-ranked
#   non-relevant tools not mined, possible unlabelled positives, default 0), OUT (default
#   runs/hardneg), TL (default ../shared/datasets/toollens).
set -euo pipefail
source "$(dirname "$0")/build.sh"
model="${MODEL:-sentence-transformers/all-MiniLM-L6-v2}"
stage1="${STAGE1:-runs/tl-minilm}"
run="${RUN_HN:-runs/tl-minilm-hn}"
out="${OUT:-runs/hardneg}"
tl="${TL:-../shared/datasets/toollens}"
mkdir -p "$out"
neg="$out/negatives-train.jsonl"
[ -s "$neg" ] || bin/toolret train mine -data "$tl" -run "$stage1" -skip "${SKIP:-0}" -out "$neg" -backend "$be"
if [ ! -s "$run/test_metrics.json" ]; then
  rm -rf "$run"
  /usr/bin/time -v bin/toolret train biencoder -data "$tl" -init "$model" -run "$run" -negatives "$neg" -hard-negatives 1 \
    -batch 64 -max-steps "${STEPS:-150}" -lr 5e-5 -query-len 32 -tool-len 64 -backend "$be" -quiet >"$run.log" 2>&1
fi
bin/toolret eval -data "$tl" -run "$stage1" -backend "$be" -save-run "$out/stage1.trec" >"$out/stage1.txt"
bin/toolret eval -data "$tl" -run "$run" -backend "$be" -save-run "$out/hn.trec" >"$out/hn.txt"
bin/toolret eval -data "$tl" -compare "$out/stage1.trec,$out/hn.trec" | tee "$out/compare.txt"
