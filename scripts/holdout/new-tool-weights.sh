#!/usr/bin/env bash
# The four-way fusion of the held-out-tool views (the fine-tuned bi-encoder, the MLC
# classifier, the pre-trained model zero-shot and BM25; scripts/holdout/minilm-ho.sh with
# MLC=1), its weights picked on dev once as one set for every tool, once with
# -new-tool-weights: a second set, and an offset, for the tools no training query needs.
# Writes OUT/hSEED-fourway.trec and OUT/hSEED-fourway-new.trec (test rankings), the dev lines
# in OUT/hSEED-new-tool-weights.txt, and compares the two query by query (eval -compare).
# Usage: scripts/holdout/new-tool-weights.sh [SEEDS]     (default "1 2 3")
# Environment: RUNS (the minilm-ho.sh output with OUT/hSEED and OUT/hSEED-mlc; default
#   runs/ho-mlc150), OUT (default RUNS), MODEL (default sentence-transformers/all-MiniLM-L6-v2),
#   TL (default ../shared/datasets/toollens).
set -euo pipefail
source "$(dirname "$0")/../pretrained/build.sh"
seeds="${1:-1 2 3}"
runs="${RUNS:-runs/ho-mlc150}"
out="${OUT:-$runs}"
model="${MODEL:-sentence-transformers/all-MiniLM-L6-v2}"
tl="${TL:-../shared/datasets/toollens}"
mkdir -p "$out"
for s in $seeds; do
  view=(-data "$tl" -holdout-tools 0.2 -holdout-seed "$s" -backend "$be")
  inputs="run:$runs/h$s,run:$runs/h$s-mlc,model:$model,bm25"
  log="$out/h$s-new-tool-weights.txt"
  : >"$log"
  for mode in fourway fourway-new; do
    extra=()
    [ "$mode" = fourway-new ] && extra=(-new-tool-weights)
    echo "== seed $s $mode" >>"$log"
    bin/toolret eval "${view[@]}" -method fusion -fusion zscore -weight dev -runs "$inputs" \
      "${extra[@]}" -save-run "$out/h$s-$mode.trec" -run-tag "$mode" 2> >(grep -v " by weights " >>"$log") | tee -a "$log"
  done
  echo "== seed $s: one set of weights against two (paired)" >>"$log"
  bin/toolret eval "${view[@]}" -compare "$out/h$s-fourway.trec,$out/h$s-fourway-new.trec" | tee -a "$log"
done
