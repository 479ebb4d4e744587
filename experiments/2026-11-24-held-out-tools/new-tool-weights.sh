#!/usr/bin/env bash
# The fusions of the held-out-tool views (experiments/2026-11-24-held-out-tools/minilm-ho.sh with MLC=1: the
# fine-tuned bi-encoder OUT/hSEED, the MLC classifier OUT/hSEED-mlc, the pre-trained model
# zero-shot and BM25), their weights picked on dev once as one set for every tool and once
# with -new-tool-weights: a second set, and an offset, for the tools no training query needs.
# Each input ranks the dev and test queries once (OUT/hSEED-in-NAME.trec, the top 100, as a
# live input does); then, from those files, the four-way fusion and the two fine-tuned models
# alone, each both ways (OUT/hSEED-SYSTEM.trec, test; the dev lines in
# OUT/hSEED-new-tool-weights.txt), each pair compared query by query (eval -compare).
# Usage: experiments/2026-11-24-held-out-tools/new-tool-weights.sh [SEEDS]     (default "1 2 3")
# Environment: RUNS (the minilm-ho.sh output; default runs/ho-mlc150), OUT (default RUNS),
#   MODEL (default sentence-transformers/all-MiniLM-L6-v2), TL (default ../shared/datasets/toollens).
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
seeds="${1:-1 2 3}"
runs="${RUNS:-runs/ho-mlc150}"
out="${OUT:-$runs}"
model="${MODEL:-sentence-transformers/all-MiniLM-L6-v2}"
tl="${TL:-../shared/datasets/toollens}"
mkdir -p "$out"
for s in $seeds; do
  view=(-data "$tl" -holdout-tools 0.2 -holdout-seed "$s" -backend "$be")
  run="$runs/h$s"
  log="$out/h$s-new-tool-weights.txt"
  : >"$log"
  declare -A input=([ft]="-run $run" [mlc]="-run $run-mlc" [zs]="-model $model -first-stage $run" [bm25]="-method bm25 -first-stage $run")
  for name in ft mlc zs bm25; do
    f="$out/h$s-in-$name.trec"
    [ -s "$f" ] && continue
    read -r -a a <<<"${input[$name]}"
    for split in dev test; do
      bin/toolret eval "${view[@]}" "${a[@]}" -split "$split" -k 100 -save-run "$f.$split" >>"$log" 2>&1
    done
    cat "$f.dev" "$f.test" >"$f.tmp" && mv "$f.tmp" "$f" && rm -f "$f.dev" "$f.test"
  done
  ins() { local IFS=,; local l=(); for n in "$@"; do l+=("$out/h$s-in-$n.trec"); done; echo "${l[*]}"; }
  for sys in "fourway:$(ins ft mlc zs bm25)" "ft-mlc:$(ins ft mlc)"; do
    name="${sys%%:*}" files="${sys#*:}"
    for mode in "" -new; do
      extra=()
      [ "$mode" = -new ] && extra=(-new-tool-weights)
      echo "== seed $s $name$mode" | tee -a "$log"
      bin/toolret eval "${view[@]}" -method fusion -fusion zscore -weight dev -first-stage "$run" -runs "$files" \
        "${extra[@]}" -save-run "$out/h$s-$name$mode.trec" -run-tag "$name$mode" 2> >(grep -v " by weights " >>"$log") | tee -a "$log"
    done
    echo "== seed $s $name: one set of weights against two (paired)" | tee -a "$log"
    bin/toolret eval "${view[@]}" -compare "$out/h$s-$name.trec,$out/h$s-$name-new.trec" | tee -a "$log"
  done
done
