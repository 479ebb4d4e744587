#!/usr/bin/env bash
# Issue #27 item 7: a pre-trained encoder fine-tuned on ToolLens's held-out-tool views
# (-holdout-tools 0.2, one run per seed), alone and fused with BM25 (zscore, the dense weight
# chosen on the view's dev split, which is carved by tools); then its weights averaged with the
# pre-trained ones (WiSE-FT at 0.5), alone and fused with BM25 (zscore, 0.5). Each seed writes
# OUT/hSEED (the run; its test_metrics.json has seen/unseen tool recall), OUT/hSEED.log
# (training, with /usr/bin/time -v's peak memory), the fine-tuned model fused with BM25 and with
# BM25 and the pre-trained model zero-shot, OUT/hSEED-wise (the WiSE-FT index), a JSON
# and a TREC file per evaluated system, and prints one line per system:
# SEED SYSTEM R@1 R@3 R@5 N@5 C@5. experiments/2026-11-24-held-out-tools/bound.py splits a TREC file's R@5 into
# its seen- and held-out-tool parts.
# Usage: experiments/2026-11-24-held-out-tools/minilm-ho.sh [SEEDS]          (default "1 2 3"; needs `make models`)
# Environment: MODEL (default sentence-transformers/all-MiniLM-L6-v2), STEPS (optimizer steps,
#   default 300), LR (default 5e-5), DEV (the dev split's fraction of the training tools, default 0.03), OUT
#   (default runs/ho7), TL (default ../shared/datasets/toollens), ARGS (more `train biencoder`
#   flags, e.g. "-separate-towers -freeze-tower tool": the tool tower locked, LiT), WISE (1; 0
#   skips the WiSE-FT rows; dev: the WiSE-FT weight picked on dev from WISE_WEIGHTS, default
#   "0 0.1 0.2 0.3 0.4 0.5" (0: the fine-tuned weights), each OUT/hSEED-wise-W an HF directory with its dev evaluation OUT/hSEED-wise-W-dev.json, the
#   chosen one evaluated with EVAL_ARGS alone and fused with BM25, OUT/hSEED-wise-W-{test,bm25}.json:
#   rows wise-ft-dev-W and wise-ft-dev-W+bm25), MLC (0; 1 also trains an MLC classifier on the view, 3 epochs, into
#   OUT/hSEED-mlc, and fuses it with the pre-trained model and BM25, then with the fine-tuned
#   model too, and with the fine-tuned model alone; the classifier scores only the tools it was
#   trained on, best of all systems on those), MLC_ARGS (more `train classifier` flags, e.g.
#   "-head-lr 1e-3"), QUERY_PROMPT (train with this query prompt, e.g. bge's instruction; the
#   run keeps it), EVAL_ARGS (more `eval` flags for the fine-tuned model's evaluations alone
#   and fused with BM25 and the zero-shot model, e.g. "-tool-len 256": the tools embedded whole
#   by a run trained on 64-token tools; then one more row, the model alone with them, from
#   OUT/hSEED-alone.json; the MLC and WiSE-FT rows do not take them). A run already trained and
#   an evaluation already written (OUT/hSEED-*.json) are kept: delete them to redo.
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
seeds="${1:-1 2 3}"
model="${MODEL:-sentence-transformers/all-MiniLM-L6-v2}"
steps="${STEPS:-300}"
lr="${LR:-5e-5}"
dev="${DEV:-0.03}"
out="${OUT:-runs/ho7}"
tl="${TL:-../shared/datasets/toollens}"
read -r -a args <<<"${ARGS:-}"
if [ -n "${QUERY_PROMPT:-}" ]; then args+=(-query-prompt "$QUERY_PROMPT"); fi
read -r -a mlcargs <<<"${MLC_ARGS:-}"
read -r -a evargs <<<"${EVAL_ARGS:-}"
wise="${WISE:-1}"
wise_weights="${WISE_WEIGHTS:-0 0.1 0.2 0.3 0.4 0.5}"
mlc="${MLC:-0}"
mkdir -p "$out"
row() { # SEED SYSTEM JSON-FILE
  python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[3]))
def find(o):
    if isinstance(o, dict):
        if "recall@5" in o: return o
        for v in o.values():
            if (r := find(v)): return r
m = find(d) or {}
print(sys.argv[1], sys.argv[2], *("%.2f" % m.get(k, float("nan")) for k in ("recall@1", "recall@3", "recall@5", "ndcg@5", "comp@5")))
PY
}
ev() { # NAME EVAL-FLAGS...: OUT/hSEED-NAME.{json,trec,err}, unless its JSON is there
  local f="$out/h$s-$1"
  shift
  [ -s "$f.json" ] || bin/toolret eval -data "$tl" "${v[@]}" "$@" -backend "$be" -json -save-run "$f.trec" >"$f.json" 2>"$f.err"
}
for s in $seeds; do
  v=(-holdout-tools 0.2 -holdout-seed "$s")
  run="$out/h$s"
  if [ ! -s "$run/test_metrics.json" ]; then
    rm -rf "$run"
    /usr/bin/time -v bin/toolret train biencoder -data "$tl" "${v[@]}" -init "$model" -run "$run" -dev "$dev" \
      -batch 64 -epochs 20 -max-steps "$steps" -eval-every 100 -lr "$lr" -query-len 32 -tool-len 64 -seed 1 \
      -backend "$be" -quiet "${args[@]}" >"$out/h$s.log" 2>&1
  fi
  row "$s" fine-tuned "$run/test_metrics.json"
  if [ ${#evargs[@]} -gt 0 ]; then
    ev alone -run "$run" "${evargs[@]}"
    row "$s" fine-tuned-with-eval-args "$out/h$s-alone.json"
  fi
  ev bm25 -method fusion -runs "run:$run,bm25" -fusion zscore -weight dev "${evargs[@]}"
  row "$s" fine-tuned+bm25 "$out/h$s-bm25.json"
  # The fine-tuned model finds the seen tools, the pre-trained one zero-shot the held-out ones
  # best: the three fused (zscore, the weights on dev).
  ev zs-bm25 -method fusion -runs "run:$run,model:$model,bm25" -fusion zscore -weight dev "${evargs[@]}"
  row "$s" fine-tuned+zero-shot+bm25 "$out/h$s-zs-bm25.json"
  if [ "$mlc" = 1 ]; then
    if [ ! -s "$run-mlc/test_metrics.json" ]; then
      rm -rf "$run-mlc"
      /usr/bin/time -v bin/toolret train classifier -kind mlc -loss softmax -data "$tl" "${v[@]}" -init "$model" \
        -run "$run-mlc" -dev 0.1 -batch 64 -epochs 3 -lr 1e-4 -max-len 48 -seed 1 -backend "$be" -quiet \
        "${mlcargs[@]}" >"$out/h$s-mlc.log" 2>&1
    fi
    row "$s" mlc "$run-mlc/test_metrics.json"
    ev mlc-zs-bm25 -method fusion -runs "run:$run-mlc,model:$model,bm25" -fusion zscore -weight dev
    row "$s" mlc+zero-shot+bm25 "$out/h$s-mlc-zs-bm25.json"
    ev ft-mlc-zs-bm25 -method fusion -runs "run:$run,run:$run-mlc,model:$model,bm25" -fusion zscore -weight dev
    row "$s" fine-tuned+mlc+zero-shot+bm25 "$out/h$s-ft-mlc-zs-bm25.json"
    # The two fine-tuned models alone, without BM25 or the pre-trained model.
    ev ft-mlc -method fusion -runs "run:$run,run:$run-mlc" -fusion zscore -weight dev
    row "$s" fine-tuned+mlc "$out/h$s-ft-mlc.json"
  fi
  if [ "$wise" = dev ]; then
    # WiSE-FT with its weight picked on the view's dev split (carved by tools, so it measures
    # new tools): each weight W of WISE_WEIGHTS interpolates the fine-tuned weights with the
    # pre-trained ones, (1-W)·fine-tuned + W·pre-trained, as an HF directory; dev N@5 (with
    # EVAL_ARGS) picks one, which is then evaluated on test alone and fused with BM25.
    best="" bestn=-1
    for w in $wise_weights; do
      d="$out/h$s-wise-$w"
      if [ ! -s "$d/manifest.json" ]; then
        if ! bin/toolret export -model "$run" -interpolate "$model" -interpolate-weight "$w" -format hf -out "$d" \
          -backend "$be" >"$d.log" 2>&1; then
          echo "WISE_WEIGHTS: weight $w: $(tail -n 1 "$d.log")" >&2
          exit 1
        fi
      fi
      ev "wise-$w-dev" -model "$d" -first-stage "$run" -split dev "${evargs[@]}"
      n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ndcg@5"])' "$out/h$s-wise-$w-dev.json")
      echo "$s wise-ft-$w dev N@5 $n"
      if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$n" "$bestn"; then
        best=$w bestn=$n
      fi
    done
    if [ -z "$best" ]; then
      echo "WISE=dev: WISE_WEIGHTS names no weight" >&2
      exit 2
    fi
    # Named by the weight, so that a later sweep that picks another one evaluates it anew.
    ev "wise-$best-test" -model "$out/h$s-wise-$best" "${evargs[@]}"
    row "$s" "wise-ft-dev-$best" "$out/h$s-wise-$best-test.json"
    ev "wise-$best-bm25" -method fusion -runs "model:$out/h$s-wise-$best,bm25" -first-stage "$run" -fusion zscore \
      -weight dev "${evargs[@]}"
    row "$s" "wise-ft-dev-$best+bm25" "$out/h$s-wise-$best-bm25.json"
    continue
  fi
  [ "$wise" = 1 ] || continue
  # WiSE-FT (Wortsman et al. 2022): the fine-tuned weights averaged with the pre-trained ones at
  # 0.5 (the paper's default, fixed beforehand), exported as an index at the training lengths.
  if [ ! -s "$out/h$s-wise/manifest.json" ]; then
    bin/toolret export -model "$run" -interpolate "$model" -interpolate-weight 0.5 -data "$tl" \
      -format index -out "$out/h$s-wise" -backend "$be" >"$out/h$s-wise.log" 2>&1
  fi
  ev wise -index "$out/h$s-wise"
  row "$s" wise-ft "$out/h$s-wise.json"
  ev wise-bm25 -index "$out/h$s-wise" -hybrid zscore
  row "$s" wise-ft+bm25 "$out/h$s-wise-bm25.json"
done
