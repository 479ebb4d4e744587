#!/usr/bin/env bash
# Issue #27 item 5, the MLC and the feedback trainer from a pre-trained encoder on a CPU:
#   1. an MLC classifier (multi-positive softmax over all tools) from MODEL, EPOCHS epochs of 64
#      on the stage-1 run's training split (the GPU recipe of kinds.sh, fewer epochs);
#   2. the LLM-free feedback loop (`train feedback -rewriter prf`) over the stage-1 bi-encoder's
#      top K, that MLC judging the retrieved tools, on the train and test queries;
#   3. the iteration-aware bi-encoder (`train biencoder -feedback`) from MODEL with stage 1's
#      recipe and step budget (150 steps of 64), on q^0..q^ITER of each training query;
#   4. stage 1 and the feedback-trained model compared on the test split (eval -compare, paired),
#      on the users' instructions (round 0) and replaying the test loops (round 1: the
#      instructions the feedback refined), against each other, round 0, and the MLC judge.
# Writes RUN_MLC, RUN_FB (logs beside them with /usr/bin/time -v's peak memory), OUT/fb.jsonl,
# OUT/{stage1,mlc,fb}.{trec,txt}, OUT/{stage1,fb}-it.{txt,roundT.trec} and OUT/compare*.txt.
# Usage: scripts/pretrained/feedback.sh       (needs `make models` and the stage-1 run)
# Environment: MODEL (default sentence-transformers/all-MiniLM-L6-v2), STAGE1 (default
#   runs/tl-minilm), RUN_MLC (default runs/tl-minilm-mlc), EPOCHS (default 3), RUN_FB (default
#   runs/tl-minilm-fb), ITER (default 1), THRESHOLD (the judge's acceptance, default 0.1: the
#   softmax MLC's probabilities sum to 1 over all tools), STEPS (default 150), OUT (default
#   runs/feedback), TL (default ../shared/datasets/toollens).
set -euo pipefail
source "$(dirname "$0")/build.sh"
model="${MODEL:-sentence-transformers/all-MiniLM-L6-v2}"
stage1="${STAGE1:-runs/tl-minilm}"
mlc="${RUN_MLC:-runs/tl-minilm-mlc}"
fb="${RUN_FB:-runs/tl-minilm-fb}"
out="${OUT:-runs/feedback}"
tl="${TL:-../shared/datasets/toollens}"
mkdir -p "$out"
if [ ! -s "$mlc/test_metrics.json" ]; then
  rm -rf "$mlc"
  /usr/bin/time -v bin/toolret train classifier -kind mlc -loss softmax -data "$tl" -init "$model" -first-stage "$stage1" \
    -run "$mlc" -batch 64 -epochs "${EPOCHS:-3}" -lr 1e-4 -max-len 48 -seed 1 -backend "$be" >"$mlc.log" 2>&1
fi
if [ ! -s "$out/fb.jsonl" ] || [ -e "$out/fb.jsonl.partial" ]; then
  touch "$out/fb.jsonl.partial"
  /usr/bin/time -v bin/toolret train feedback -data "$tl" -first-stage "$stage1" -rewriter prf -prf-model "$mlc" \
    -prf-threshold "${THRESHOLD:-0.1}" -iterations "${ITER:-1}" -k 10 -split train,test -backend "$be" \
    -out "$out/fb.jsonl" >"$out/fb.log" 2>&1
  rm -f "$out/fb.jsonl.partial"
fi
if [ ! -s "$fb/test_metrics.json" ]; then
  rm -rf "$fb"
  /usr/bin/time -v bin/toolret train biencoder -data "$tl" -feedback "$out/fb.jsonl" -init "$model" -run "$fb" \
    -batch 64 -epochs 1 -max-steps "${STEPS:-150}" -lr 5e-5 -query-len 64 -tool-len 64 -seed 1 -backend "$be" \
    -quiet >"$fb.log" 2>&1
fi
bin/toolret eval -data "$tl" -run "$stage1" -backend "$be" -save-run "$out/stage1.trec" >"$out/stage1.txt"
bin/toolret eval -data "$tl" -run "$mlc" -backend "$be" -save-run "$out/mlc.trec" >"$out/mlc.txt"
bin/toolret eval -data "$tl" -run "$fb" -backend "$be" -save-run "$out/fb.trec" >"$out/fb.txt"
bin/toolret eval -data "$tl" -compare "$out/stage1.trec,$out/fb.trec" | tee "$out/compare.txt"
bin/toolret eval -data "$tl" -run "$stage1" -feedback "$out/fb.jsonl" -split test -backend "$be" -save-run "$out/stage1-it.trec" >"$out/stage1-it.txt"
bin/toolret eval -data "$tl" -run "$fb" -feedback "$out/fb.jsonl" -split test -backend "$be" -save-run "$out/fb-it.trec" >"$out/fb-it.txt"
bin/toolret eval -data "$tl" -compare "$out/stage1-it.round1.trec,$out/fb-it.round1.trec" >"$out/compare-round1.txt"
bin/toolret eval -data "$tl" -compare "$out/stage1-it.round0.trec,$out/stage1-it.round1.trec" >"$out/compare-stage1-rounds.txt"
bin/toolret eval -data "$tl" -compare "$out/fb-it.round0.trec,$out/fb-it.round1.trec" >"$out/compare-fb-rounds.txt"
bin/toolret eval -data "$tl" -compare "$out/mlc.trec,$out/fb-it.round1.trec" >"$out/compare-mlc.txt"
