#!/usr/bin/env bash
# `make general`'s cross-encoder (step 5) judged on the zero-shot dev split (issue #55). make
# general trains a cross-encoder on the libraries its bi-encoder trained on and adds it to the
# recipe when it wins on their pooled dev split; at 150 steps it did (+2.41 N@5) and then lost
# on the seven zero-shot sets (docs/results/2026-11-29-general-reranker.md). Here the same rule
# runs on run.sh's model, whose training left four libraries out (acebench, nestful, tooltalk,
# workbench), and the reranker it picks is measured on those four libraries: a dev signal for
# libraries never trained on that does not touch the suite.
#  1. the first stage: recipe.sh's exported recipe (adaptive BM25 weight learned on the training
#     libraries' dev, 128-token tools) with per-clause retrieval merged as make general merges
#     (mix, whole query 0.5);
#  2. the cross-encoder trained as make general step 5 trains it (train crossencoder -data: the
#     run's training libraries, -first-stage OUT/ft, RERANK_STEPS steps of 8 queries);
#  3. make general's rule on the training libraries' pooled dev split: for each depth of 10 and
#     20 the weight picked there (eval -weight dev), the best depth kept when it beats the recipe;
#  4. on the four left-out libraries (1,502 queries, each ranked within its own library): the
#     recipe alone, the reranker at each depth with dev's weight, and at depth 20 with every
#     weight of WEIGHTS (how much any interpolation could give there).
# Usage: experiments/2026-11-30-zeroshot-dev/reranker.sh [OUT]   (OUT: run.sh's and recipe.sh's,
# default runs/zsdev-s300; env RERANK_STEPS, default 240 as make general; WEIGHTS, default
# "0.1 0.2 0.3"). A table whose file exists is not redone.
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
out=${1:-runs/zsdev-s300}
rsteps=${RERANK_STEPS:-240}
export TOOLRET_DATASETS="${TOOLRET_DATASETS:-$PWD/../shared/datasets}"
[ -f "$out/ft/summary.json" ] || { echo "reranker: $out/ft is not a finished run (run run.sh first)" >&2; exit 1; }
mapfile -t recipes < <(ls -d "$out"/recipe/model-tool*-w* 2>/dev/null || true)
[ "${#recipes[@]}" = 1 ] || { echo "reranker: want one recipe model in $out/recipe (recipe.sh writes it), found ${#recipes[@]}" >&2; exit 1; }
pooled=toolmix/acebench:1,toolmix/nestful:1,toolmix/tooltalk:1,toolmix/workbench:1
data=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["args"]["data"])' "$out/ft/run.json")
r=$out/rerank
mkdir -p "$r"
echo "cpu: $(lscpu | grep -o 'avx2\|avx512_bf16\|amx_bf16' | sort -u | tr '\n' ' ')"
n5() { evalrow "$r/$1.txt" N@5 | awk '{print $2}'; }
better() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$1" "$2"; }
# ev NAME ARGS...: eval ARGS into r/NAME.txt, unless it is there
ev() {
  local f=$r/$1.txt
  shift
  if [ ! -s "$f" ]; then
    bin/toolret eval -backend "$be" "$@" > "$f.tmp"
    mv "$f.tmp" "$f"
  fi
}

fs=$r/first-stage
if [ ! -f "$fs/config.json" ]; then
  rm -rf "$fs.tmp"
  bin/toolret export -model "${recipes[0]}" -format hf -clauses -clauses-merge mix -clauses-whole 0.5 -out "$fs.tmp" >/dev/null
  mv "$fs.tmp" "$fs"
fi
ce=$out/ce
if [ ! -f "$ce/summary.json" ]; then
  rm -rf "$ce"
  /usr/bin/time -v bin/toolret train crossencoder -data "$data" -first-stage "$out/ft" -run "$ce" -batch 8 \
    -max-steps "$rsteps" -eval-every 80 -lr 3e-5 -depth 30 -negatives-per-positive 7 -dev-max 300 \
    -test "" -seed 1 -backend "$be" -quiet 2> "$out/ce.log" || { tail -20 "$out/ce.log" >&2; exit 1; }
fi
grep -E "Maximum resident|Elapsed \(wall" "$out/ce.log" || true

# 3. make general's rule, on the training libraries' pooled dev split
ev dev-recipe -data "$data" -model "$fs" -first-stage "$out/ft" -split dev
base=$(n5 dev-recipe)
echo "training libraries' dev: the recipe alone N@5 $base"
bestd="" bestw="" bestn=$base
declare -A devw
for dp in 10 20; do
  ev dev-rerank$dp -data "$data" -model "$fs" -reranker "$ce" -depth "$dp" -weight dev -first-stage "$out/ft" -split dev
  w=$(sed -n 's/^rerank weight \([0-9.]*\) .*/\1/p' "$r/dev-rerank$dp.txt" | head -1)
  [ -n "$w" ] || { echo "reranker: $r/dev-rerank$dp.txt has no \"rerank weight W\" line" >&2; exit 1; }
  devw[$dp]=$w
  n=$(n5 dev-rerank$dp)
  echo "training libraries' dev: reranker at depth $dp, dev weight $w: N@5 $n"
  if better "$w" 0 && better "$n" "$bestn"; then bestd=$dp bestw=$w bestn=$n; fi
done
if [ -n "$bestd" ]; then
  echo "make general's rule: the reranker joins the recipe at depth $bestd, weight $bestw (dev N@5 $bestn > $base)"
else
  echo "make general's rule: the reranker stays out of the recipe (dev N@5 $base not beaten)"
fi

# 4. the left-out libraries (their train split: queries the models never saw)
ev zs-recipe -data "$pooled" -split train -model "$fs" -subsets
echo "zero-shot dev: the recipe alone N@5 $(n5 zs-recipe)"
for dp in 10 20; do
  w=${devw[$dp]}
  ev zs-rerank$dp-w$w -data "$pooled" -split train -model "$fs" -reranker "$ce" -depth "$dp" -weight "$w" -subsets
  echo "zero-shot dev: reranker at depth $dp, the training libraries' dev weight $w: N@5 $(n5 zs-rerank$dp-w$w)"
done
for w in ${WEIGHTS:-0.1 0.2 0.3}; do
  [ "$w" != "${devw[20]}" ] || continue
  ev zs-rerank20-w$w -data "$pooled" -split train -model "$fs" -reranker "$ce" -depth 20 -weight "$w" -subsets
  echo "zero-shot dev: reranker at depth 20, weight $w: N@5 $(n5 zs-rerank20-w$w)"
done
