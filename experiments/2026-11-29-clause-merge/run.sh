#!/usr/bin/env bash
# Per-clause retrieval's settings, chosen on the pooled dev split of the general model's
# training data (never on the zero-shot suite):
#  - how -clauses merges the whole query's ranking with its clauses' rankings: max (the
#    recipe's default), mix and rrf at whole-query weights 0.3-0.7, on the model of
#    MERGE_OUT (default runs/general-ms: WiSE-FT 0.3, BM25 zscore 0.7);
#  - the shortest clause kept apart (-clauses-min-words 3, 5, 8), on the model of MIN_OUT
#    (default runs/general-ms2: WiSE-FT 0, BM25 zscore 0.8, tools at 128 tokens).
# Usage: experiments/2026-11-29-clause-merge/run.sh  (env: MERGE_OUT, MIN_OUT, DATA as make general's)
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
data="${DATA:-toollens:1,toolmix:1}"
export TOOLRET_DATASETS="${TOOLRET_DATASETS:-$PWD/../shared/datasets}"
dir=experiments/2026-11-29-clause-merge/out
mkdir -p "$dir"
# dev FILE MODEL FT FLAGS...: the pooled dev evaluation of MODEL with FLAGS into FILE, once.
dev() {
  local f=$1 m=$2 ft=$3
  shift 3
  if [ ! -s "$f" ]; then
    /usr/bin/time -f "%e s wall, %M KiB peak" bin/toolret eval -data "$data" -model "$m" -first-stage "$ft" -split dev -backend "$be" \
      "$@" > "$f.tmp" 2> "$f.log"
    mv "$f.tmp" "$f"
  fi
  echo "$*: $(grep '^all' "$f")"
}
out="${MERGE_OUT:-runs/general-ms}"
for v in "mix 0.5" "mix 0.7" "rrf 0.5" "rrf 0.7" "mix 0.3"; do
  set -- $v
  dev "$dir/dev-$1-$2.txt" "$out/model-hybrid" "$out/ft" -clauses -clauses-merge "$1" -clauses-whole "$2"
done
out="${MIN_OUT:-runs/general-ms2}"
for n in 3 5 8; do
  dev "$dir/dev-$(basename "$out")-min$n.txt" "$out/model" "$out/ft" -clauses -clauses-min-words "$n"
done
