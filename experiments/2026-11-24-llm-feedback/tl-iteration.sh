#!/bin/bash
# Iteration-aware training on ToolLens (README, "Iteration-aware training"): the joint model,
# the same steps without feedback, and the three ablations, all from runs/tl-after; then the
# replayed and live rounds of the test split, one TREC file per round, and the comparisons.
# Needs: a -tags onnx build in $B, runs/tl-after, runs/mlc-bert, and the prf collections
#   train feedback -data $TL -first-stage runs/tl-after -rewriter prf -prf-model runs/mlc-bert -iterations 3 -k 10 -split train -out $FB
#   train feedback -data $TL -first-stage runs/tl-after -rewriter prf -prf-model runs/mlc-bert -iterations 3 -k 10 -split test -out $FBT
# Usage: experiments/2026-11-24-llm-feedback/tl-iteration.sh A|B|compare   (A and B are two lanes, one core each)
set -euo pipefail
TL=${TL:-../shared/datasets/toollens}
B=${B:-bin}
RUNS=${RUNS:-runs}
R=$RUNS/fb16
FB=${FB:-$RUNS/fb-prf/tl-prf.jsonl}
FBT=${FBT:-$RUNS/fb-prf/tl-prf-test.jsonl}
BE=onnx:cpu,intra_threads=1
C="-data $TL -query-len 64 -symmetric -temperature 0.05 -batch 32 -epochs 1 -max-steps 400 -eval-every 100 -backend $BE -quiet"
mkdir -p $R/trec
ev() { # run
  $B/toolret eval -data $TL -run $R/$1 -feedback $FBT -iterations 3 -cutoffs 1,3,5 -backend $BE -save-run $R/trec/$1.trec > $R/$1-replay.txt
  $B/toolret eval -data $TL -run $R/$1 -rewriter prf -prf-model $RUNS/mlc-bert -iterations 3 -cutoffs 1,3,5 -backend $BE > $R/$1-live.txt
}
one() { # name args...
  n=$1; shift
  $B/toolret train biencoder $C -run $R/$n "$@" > $R/$n.log 2>&1
  ev $n
}
case ${1:-} in
A) one joint -init $RUNS/tl-after -lr 1e-4 -feedback $FB
   one nohn -init $RUNS/tl-after -lr 1e-4 -feedback $FB -feedback-hard-negatives=false ;;
B) one nofb -init $RUNS/tl-after -lr 1e-4
   one nojoint -init $RUNS/tl-after -lr 1e-4 -feedback $FB -feedback-joint=false
   one scratch -layers 2 -hidden 192 -heads 4 -vocab-size 8000 -lr 1e-3 -feedback $FB ;;
compare)
  for p in "nofb.round3 joint.round3" "nofb.round0 joint.round3" "joint.round0 joint.round3" "nofb.round0 nofb.round3" \
           "nojoint.round3 joint.round3" "nohn.round3 joint.round3" "scratch.round3 joint.round3"; do
    set -- $p
    $B/toolret eval -data $TL -compare $R/trec/$1.trec,$R/trec/$2.trec -cutoffs 1,3,5 -compare-samples 5000
  done ;;
*) echo "usage: $0 A|B|compare" >&2; exit 2 ;;
esac
