#!/usr/bin/env bash
# The shortest clause -clauses keeps apart (-clauses-min-words; rerank's default 3), on the
# pooled dev split with the general model of make general (its recipe's clauses replaced).
# Usage: experiments/2026-11-29-clause-merge/minwords.sh  (env: OUT, default runs/general-ms2)
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
out="${OUT:-runs/general-ms2}"
data="${DATA:-toollens:1,toolmix:1}"
export TOOLRET_DATASETS="${TOOLRET_DATASETS:-$PWD/../shared/datasets}"
dir=experiments/2026-11-29-clause-merge/out
mkdir -p "$dir"
for n in ${MIN_WORDS:-3 5 8}; do
  f="$dir/dev-$(basename "$out")-min$n.txt"
  [ -s "$f" ] || bin/toolret eval -data "$data" -model "$out/model" -first-stage "$out/ft" -split dev -backend "$be" \
    -clauses -clauses-min-words "$n" > "$f.tmp"
  [ -s "$f" ] || mv "$f.tmp" "$f"
  echo "min words $n: $(grep '^all' "$f")"
done
