#!/usr/bin/env bash
# How -clauses merges the whole query's ranking with its clauses' rankings, chosen on the
# pooled dev split of the general model's training data (never on the zero-shot suite):
# max (the recipe's default), mix and rrf at whole-query weights 0.5 and 0.7.
# Usage: experiments/2026-11-29-clause-merge/run.sh  (env: OUT, the make general output
# directory, default runs/general-ms; DATA as make general's).
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
out="${OUT:-runs/general-ms}"
data="${DATA:-toollens:1,toolmix:1}"
export TOOLRET_DATASETS="${TOOLRET_DATASETS:-$PWD/../shared/datasets}"
dir=experiments/2026-11-29-clause-merge/out
mkdir -p "$dir"
for v in "mix 0.5" "mix 0.7" "rrf 0.5" "rrf 0.7" "mix 0.3"; do
  set -- $v
  f="$dir/dev-$1-$2.txt"
  [ -s "$f" ] && continue
  /usr/bin/time -f "%e s wall, %M KiB peak" bin/toolret eval -data "$data" -model "$out/model-hybrid" -first-stage "$out/ft" -split dev -backend "$be" \
    -clauses -clauses-merge "$1" -clauses-whole "$2" > "$f.tmp" 2> "$f.log"
  mv "$f.tmp" "$f"
  echo "$v: $(grep '^all' "$f")"
done
