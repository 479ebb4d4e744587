#!/usr/bin/env bash
# GradCache on the feedback trainer (`train biencoder -feedback`: four encoder passes per
# pair, the heaviest training step toolret has; peak RSS 15.39 GiB at batch 64 on 2026-11-26):
#   1. a short stage-1 bi-encoder and a short MLC judge from MODEL (STEPS1 steps of 64 each,
#      default 20: what is measured is the trainer's memory and time at the feedback shapes,
#      which the quality of the collection does not change beyond the instructions' lengths);
#   2. the LLM-free feedback collection (`train feedback -rewriter prf`) over the training
#      split, the judge accepting at THRESHOLD (default 0.02);
#   3. experiments/2026-11-26-gradcache/gradcache.sh on it: batch 64 whole and in mini-batches of 16 (RUNS),
#      instructions of 64 tokens, STEPS (default 4) steps each.
# Runs go to OUT (default runs/gradcache-fb); LOCK as in gradcache.sh.
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
MODEL=${MODEL:-sentence-transformers/all-MiniLM-L6-v2}
DATA=${DATA:-../shared/datasets/toollens}
OUT=${OUT:-runs/gradcache-fb}
STEPS1=${STEPS1:-20}
LOCKCMD=()
if [[ -n "${LOCK:-}" ]]; then LOCKCMD=(flock "$LOCK"); fi
mkdir -p "$OUT"
if [[ ! -s "$OUT/stage1/summary.json" ]]; then
	rm -rf "$OUT/stage1"
	"${LOCKCMD[@]}" bin/toolret train biencoder -data "$DATA" -init "$MODEL" -run "$OUT/stage1" -batch 64 -max-steps "$STEPS1" \
		-eval-every "$STEPS1" -lr 5e-5 -query-len 32 -tool-len 64 -test "" -backend "$be" -quiet >"$OUT/stage1.log" 2>&1
fi
if [[ ! -s "$OUT/mlc/summary.json" ]]; then
	rm -rf "$OUT/mlc"
	"${LOCKCMD[@]}" bin/toolret train classifier -kind mlc -loss softmax -data "$DATA" -init "$MODEL" -first-stage "$OUT/stage1" \
		-run "$OUT/mlc" -batch 64 -epochs 1 -max-steps "$STEPS1" -eval-every "$STEPS1" -lr 1e-4 -max-len 48 -test "" \
		-backend "$be" -quiet >"$OUT/mlc.log" 2>&1
fi
if [[ ! -s "$OUT/fb.jsonl" || -e "$OUT/fb.jsonl.partial" ]]; then
	touch "$OUT/fb.jsonl.partial"
	"${LOCKCMD[@]}" bin/toolret train feedback -data "$DATA" -first-stage "$OUT/stage1" -rewriter prf -prf-model "$OUT/mlc" \
		-prf-threshold "${THRESHOLD:-0.02}" -iterations 1 -k 10 -split train -backend "$be" -out "$OUT/fb.jsonl" >"$OUT/fb.log" 2>&1
	rm -f "$OUT/fb.jsonl.partial"
fi
RUNS=${RUNS:-64:0 64:16} STEPS=${STEPS:-4} SIDES=toolret QLEN=64 ARGS="-feedback $OUT/fb.jsonl" OUT="$OUT" \
	bash "$(dirname "$0")/gradcache.sh"
