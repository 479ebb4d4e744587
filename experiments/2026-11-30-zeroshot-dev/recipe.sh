#!/usr/bin/env bash
# The general model's recipe, chosen on the zero-shot dev split (issue #55): `make general`
# picks its BM25 fusion weight, per-clause retrieval and tool length on the pooled dev split of
# the libraries it trains on; here the same choices are made on the four libraries run.sh left
# out of training (acebench, nestful, tooltalk, workbench), with run.sh's model (OUT/ft):
#  1. the dense model at 256-token queries and 128- or 256-token tools, and BM25, each ranking
#     saved (eval -save-run);
#  2. BM25 zscore fusion at each dense weight of WEIGHTS over those rankings (1: dense alone),
#     and at the best length with the adaptive dense weight make general would learn (on the
#     run's own dev split, averaging over its libraries: eval -weight adaptive);
#  3. the best (tool length, weight) exported as a model directory with that fusion, then
#     per-clause retrieval by each merge rule of CLAUSES ("none": without) on top of it.
# Every figure is pooled N@5 over the four libraries' 1,502 queries, each ranked within its
# own library (their train split: the model never saw them). The zero-shot suite is not used.
# Usage: experiments/2026-11-30-zeroshot-dev/recipe.sh [OUT]   (OUT: run.sh's, default
# runs/zsdev-s300; env WEIGHTS, CLAUSES). A table whose file exists is not redone.
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
out=${1:-runs/zsdev-s300}
weights=${WEIGHTS:-0.5 0.6 0.7 0.8 0.9 1}
clauses=${CLAUSES:-none max mix,whole=0.5 mix,whole=0.7 rrf,whole=0.5}  # MERGE[,whole=W]
export TOOLRET_DATASETS="${TOOLRET_DATASETS:-$PWD/../shared/datasets}"
[ -f "$out/ft/summary.json" ] || { echo "recipe: $out/ft is not a finished run (run run.sh first)" >&2; exit 1; }
pooled=toolmix/acebench:1,toolmix/nestful:1,toolmix/tooltalk:1,toolmix/workbench:1
r=$out/recipe
mkdir -p "$r"
echo "cpu: $(lscpu | grep -o 'avx2\|avx512_bf16\|amx_bf16' | sort -u | tr '\n' ' ')"
# ev NAME ARGS...: eval ARGS on the pooled split into r/NAME.txt, unless it is there
ev() {
  local f=$r/$1.txt
  shift
  if [ ! -s "$f" ]; then
    bin/toolret eval -data "$pooled" -split train -backend "$be" "$@" > "$f.tmp"
    mv "$f.tmp" "$f"
  fi
}
n5() { evalrow "$r/$1.txt" N@5 | awk '{print $2}'; }
better() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$1" "$2"; }

ev bm25 -method bm25 -save-run "$r/bm25.json"
echo "bm25: N@5 $(n5 bm25)"
best="" bestn=-1
for tl in 128 256; do
  ev dense-tool$tl -model "$out/ft" -query-len 256 -tool-len $tl -save-run "$r/dense-tool$tl.json"
  for w in $weights; do
    name=dense-tool$tl
    if [ "$w" != 1 ]; then
      name=fusion-tool$tl-w$w
      ev "$name" -method fusion -runs "$r/dense-tool$tl.json,$r/bm25.json" -fusion zscore -weight "$w"
    fi
    n=$(n5 "$name")
    echo "tools at $tl tokens, dense weight $w: N@5 $n"
    if better "$n" "$bestn"; then best="$tl $w" bestn=$n; fi
  done
done
read -r tl w <<< "$best"
echo "fixed weights: tools at $tl tokens, dense weight $w (N@5 $bestn)"
# The adaptive dense weight as make general learns it: on the run's own dev split (the
# training libraries' held-back queries), averaging over those libraries; then tried here.
data=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["args"]["data"])' "$out/ft/run.json")
f=$r/adaptive-dev-tool$tl.txt
if [ ! -s "$f" ]; then
  bin/toolret eval -data "$data" -split dev -method fusion -runs "run:$out/ft,bm25" -fusion zscore -weight adaptive \
    -first-stage "$out/ft" -query-len 256 -tool-len "$tl" -backend "$be" > "$f.tmp"
  mv "$f.tmp" "$f"
fi
rule=$(sed -n 's/.*(-weight adaptive:\([^)]*\)).*/\1/p' "$r/adaptive-dev-tool$tl.txt" | head -1)
[ -n "$rule" ] || { echo "recipe: $r/adaptive-dev-tool$tl.txt names no rule" >&2; exit 1; }
ev fusion-tool$tl-adaptive -method fusion -runs "$r/dense-tool$tl.json,$r/bm25.json" -fusion zscore -weight "adaptive:$rule"
n=$(n5 fusion-tool$tl-adaptive)
echo "tools at $tl tokens, adaptive dense weight $rule (learned on the training libraries' dev): N@5 $n"
if [ "${rule#*,}" != 0 ] && better "$n" "$bestn"; then w="adaptive:$rule" bestn=$n; fi
echo "recipe: tools at $tl tokens, dense weight $w (N@5 $bestn)"
wn=$(echo "$w" | tr ':,' '--')
m=$r/model-tool$tl-w$wn
if [ ! -f "$m/config.json" ]; then
  rm -rf "$m.tmp"
  hyb=()
  case $w in
    1) ;;
    adaptive:*) hyb=(-hybrid zscore -hybrid-weight "$w") ;;
    *) hyb=(-hybrid zscore -hybrid-weight "$w") ;;
  esac
  bin/toolret export -model "$out/ft" -query-len 256 -tool-len "$tl" -format hf "${hyb[@]}" \
    -selected-on "tools at $tl tokens and dense weight $w on the zero-shot dev split ($pooled, train)" -out "$m.tmp" >/dev/null
  mv "$m.tmp" "$m"
fi
# The exported recipe, evaluated as served (eval -model: each library's top 10 from its own
# tools, the fusion over each side's top 100), is the baseline of the clauses.
ev recipe-tool$tl-w$wn -model "$m"
bestn=$(n5 recipe-tool$tl-w$wn)
echo "the recipe as exported (eval -model $m): N@5 $bestn"
bestc=none
for c in $clauses; do
  if [ "$c" = none ]; then
    n=$bestn
  else
    name=clauses-$(echo "$c" | tr ',=' '--')-tool$tl-w$wn
    a=(-clauses -clauses-merge "${c%%,*}")
    [[ $c != *whole=* ]] || a+=(-clauses-whole "${c##*whole=}")
    ev "$name" -model "$m" "${a[@]}"
    n=$(n5 "$name")
  fi
  echo "clauses $c: N@5 $n"
  if better "$n" "$bestn"; then bestc=$c bestn=$n; fi
done
echo "zero-shot dev choice: tools at $tl tokens, dense weight $w, clauses $bestc (pooled N@5 $bestn)"
