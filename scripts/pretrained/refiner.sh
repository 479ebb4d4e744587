#!/usr/bin/env bash
# Issue #27 item 5, the ToolRefiner from a pre-trained encoder on a CPU: the refiner's encoder
# initialised from MODEL, re-ordering the top N of a fine-tuned bi-encoder (stage 1, the
# README's 150-step MiniLM recipe by default) ranked by its Tool2Vec usage vectors (or
# CANDIDATES=bi-encoder: its text vectors; CANDIDATES=mlc with CANDIDATES_RUN: that MLC run's
# top N, the paper's ToolRefiner + MLC), the first-stage weight chosen on dev; then the
# candidates' own ranking and the refiner compared on the test split (eval -compare, paired). Writes RUN_REF (the run;
# its log beside it with /usr/bin/time -v's peak memory), OUT/{stage1,ref}.trec and
# OUT/compare.txt.
# Usage: scripts/pretrained/refiner.sh       (needs `make models` and the stage-1 run)
# Environment: MODEL (default sentence-transformers/all-MiniLM-L6-v2), STAGE1 (default
#   runs/tl-minilm), RUN_REF (default runs/tl-minilm-ref), CANDIDATES (default usage), STEPS
#   (default 300), OUT (default runs/refiner), TL (default ../shared/datasets/toollens),
#   CANDIDATES_RUN (the MLC run, with CANDIDATES=mlc), MAX_TIME (-max-time: the training stops at
#   that wall-clock time, e.g. 75m, evaluated there). STEPS=0: all 3 epochs.
set -euo pipefail
source "$(dirname "$0")/build.sh"
model="${MODEL:-sentence-transformers/all-MiniLM-L6-v2}"
stage1="${STAGE1:-runs/tl-minilm}"
run="${RUN_REF:-runs/tl-minilm-ref}"
cand="${CANDIDATES:-usage}"
crun=()
if [ "$cand" = mlc ]; then
  [ -n "${CANDIDATES_RUN:-}" ] || { echo "refiner.sh: CANDIDATES=mlc needs CANDIDATES_RUN (an MLC run)" >&2; exit 2; }
  crun=(-candidates-run "$CANDIDATES_RUN")
fi
out="${OUT:-runs/refiner}"
tl="${TL:-../shared/datasets/toollens}"
mkdir -p "$out"
if [ ! -s "$run/test_metrics.json" ]; then
  rm -rf "$run"
  /usr/bin/time -v bin/toolret train refiner -data "$tl" -init "$model" -first-stage "$stage1" -candidates "$cand" "${crun[@]}" \
    -run "$run" -n 64 -batch 32 -epochs 3 -max-steps "${STEPS:-300}" ${MAX_TIME:+-max-time "$MAX_TIME"} -lr 5e-5 -seed 1 -backend "$be" -quiet >"$run.log" 2>&1
fi
if [ "$cand" = mlc ]; then
  bin/toolret eval -data "$tl" -run "$CANDIDATES_RUN" -backend "$be" -save-run "$out/stage1.trec" >"$out/stage1.txt"
else
  vec=text
  [ "$cand" = usage ] && vec=usage
  bin/toolret eval -data "$tl" -run "$stage1" -tool-vectors "$vec" -backend "$be" -save-run "$out/stage1.trec" >"$out/stage1.txt"
fi
bin/toolret eval -data "$tl" -run "$run" -backend "$be" -save-run "$out/ref.trec" >"$out/ref.txt"
bin/toolret eval -data "$tl" -compare "$out/stage1.trec,$out/ref.trec" | tee "$out/compare.txt"
