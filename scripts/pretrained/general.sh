#!/usr/bin/env bash
# The general tool retriever (docs/pre-trained-models.md, "A general tool retriever"): for a
# library with no queries of its own. Fine-tunes MODEL on ToolLens (150 steps of batch 64, lr
# 5e-5, as the fine-tuning table), interpolates the fine-tuned weights with MODEL's at 0.5
# (WiSE-FT's default, fixed beforehand: nothing is selected on BFCL), exports it with the
# pre-trained model's own length limit (256 tokens: BFCL's function schemas are long), and
# reports it zero-shot on BFCL's test split (never trained or selected on) against BM25 and the
# zero-shot MODEL, alone and fused with BM25. It also writes the general retriever as a model
# directory (OUT_DIR/model, sentence-transformers layout, 256 tokens recorded) that `serve
# -library`, `export -model` and sentence-transformers load: the model to start from when a
# library has no queries of its own.
# Usage: scripts/pretrained/general.sh [MODEL] [OUT_DIR]   (needs `make models`, ../shared;
# ~15 min of training on 2 cores with ONNX Runtime, `make install-onnx`)
set -euo pipefail
source "$(dirname "$0")/build.sh"
model="${1:-sentence-transformers/all-MiniLM-L6-v2}"
out="${2:-runs/general}"
mkdir -p "$out"
tl=../shared/datasets/toollens
bf=../shared/datasets/bfcl
if [ ! -f "$out/ft/summary.json" ]; then
  rm -rf "$out/ft"
  bin/toolret train biencoder -data $tl -init "$model" -run "$out/ft" -batch 64 -max-steps 150 -lr 5e-5 \
    -query-len 32 -tool-len 64 -backend $be -quiet
fi
rm -rf "$out/index" "$out/model"
bin/toolret export -model "$out/ft" -interpolate "$model" -interpolate-weight 0.5 -query-len 256 -tool-len 256 \
  -format index -data $bf -out "$out/index" -backend $be
bin/toolret export -model "$out/ft" -interpolate "$model" -interpolate-weight 0.5 -query-len 256 -tool-len 256 \
  -format hf -out "$out/model"
row() { # SYSTEM JSON
  python3 -c 'import json,sys; m=json.loads(sys.argv[2]); print("bfcl test", sys.argv[1], *("%.2f" % m[k] for k in ("recall@1","recall@3","recall@5","ndcg@5")))' "$@"
}
echo "DATA SPLIT SYSTEM R@1 R@3 R@5 N@5"
row bm25 "$(bin/toolret eval -data $bf -method bm25 -json)"
row zero-shot "$(bin/toolret eval -data $bf -model "$model" -backend $be -json)"
row fine-tuned-on-toollens "$(bin/toolret eval -data $bf -model "$out/ft" -backend $be -json)"
rm -rf "$out/index-ft256" # the ablation: the fine-tuned weights alone (weight 0), same lengths
bin/toolret export -model "$out/ft" -interpolate "$model" -interpolate-weight 0 -query-len 256 -tool-len 256 \
  -format index -data $bf -out "$out/index-ft256" -backend $be
row fine-tuned-256-tokens "$(bin/toolret eval -data $bf -index "$out/index-ft256" -backend $be -json)"
row general "$(bin/toolret eval -data $bf -index "$out/index" -backend $be -json)"
row general+bm25 "$(bin/toolret eval -data $bf -index "$out/index" -hybrid zscore -backend $be -json)"
echo "the general retriever: $out/model (serve it over your library: bin/toolret serve -library LIB.jsonl -model $out/model)"
