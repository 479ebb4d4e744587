#!/usr/bin/env bash
# Zero-shot figures of a pre-trained model (README "Pre-trained models"): ToolLens's standard
# test split, its held-out-tool views (-holdout-tools 0.2, seeds 1-3) and BFCL (test only), each
# against BM25 and fused with it (zscore, dense weight 0.5, as serve -hybrid serves it).
# Usage: scripts/pretrained/zeroshot.sh [MODEL] [OUT_DIR]   (needs `make models`, ../shared)
# Environment: ARGS, more flags for the model's rows (e.g. bge's query instruction:
#   ARGS='-query-prompt "Represent this sentence for searching relevant passages: "').
# Prints one line per row: DATA VIEW SYSTEM R@1 R@3 R@5 N@5 C@5; rankings go to OUT_DIR.
set -euo pipefail
source "$(dirname "$0")/build.sh"
model="${1:-sentence-transformers/all-MiniLM-L6-v2}"
out="${2:-runs/zeroshot}"
mkdir -p "$out"
eval "margs=(${ARGS:-})"
row() { # DATA VIEW SYSTEM JSON
  python3 -c 'import json,sys; m=json.loads(sys.argv[4]); print(sys.argv[1], sys.argv[2], sys.argv[3], *("%.2f" % m[k] for k in ("recall@1","recall@3","recall@5","ndcg@5","comp@5")))' "$@"
}
tl=../shared/datasets/toollens
bf=../shared/datasets/bfcl
views=("standard:" "holdout1:-holdout-tools 0.2 -holdout-seed 1" "holdout2:-holdout-tools 0.2 -holdout-seed 2" "holdout3:-holdout-tools 0.2 -holdout-seed 3")
for v in "${views[@]}"; do
  name=${v%%:*}; flags=${v#*:}
  # shellcheck disable=SC2086
  row toollens "$name" bm25 "$(bin/toolret eval -data $tl $flags -method bm25 -json -save-run "$out/tl-$name-bm25.trec")"
  # shellcheck disable=SC2086
  row toollens "$name" zero-shot "$(bin/toolret eval -data $tl $flags -model "$model" "${margs[@]}" -backend $be -json -save-run "$out/tl-$name-zs.trec")"
  # shellcheck disable=SC2086
  row toollens "$name" zero-shot+bm25 "$(bin/toolret eval -data $tl $flags -model "$model" "${margs[@]}" -backend $be -hybrid zscore -json)"
done
row bfcl test bm25 "$(bin/toolret eval -data $bf -method bm25 -json -save-run "$out/bfcl-bm25.trec")"
row bfcl test zero-shot "$(bin/toolret eval -data $bf -model "$model" "${margs[@]}" -backend $be -json -save-run "$out/bfcl-zs.trec")"
row bfcl test zero-shot+bm25 "$(bin/toolret eval -data $bf -model "$model" "${margs[@]}" -backend $be -hybrid zscore -json)"
