#!/bin/bash
# Cold start (docs/learning-from-use.md): a library with no queries. MiniLM is fine-tuned on
# synthetic queries made by templates from the definitions of every ToolLens tool (train
# biencoder -synthetic N; no real query is trained or selected on), then measured on the real
# queries of the held-out tools of -holdout-tools 0.2 -holdout-seed SEED (the view's test
# split) against BM25 and zero-shot MiniLM, with paired comparisons (eval -compare).
#
# Usage: flock /work/heavy.lock experiments/2026-11-26-usage-cold-start/coldstart.sh [SEED]   (N=8 queries per tool; OUT=runs/coldstart-hSEED)
set -euo pipefail
# The Makefile's Go (this machine's own is older): go build below needs it.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.4} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOFLAGS=${GOFLAGS:--buildvcs=false}
S=${1:-1}
N=${N:-8}
TL=${TL:-../shared/datasets/toollens}
MODEL=${MODEL:-sentence-transformers/all-MiniLM-L6-v2}
OUT=${OUT:-runs/coldstart-h$S}
BE=${BE:-onnx}
B=$OUT/bin
mkdir -p $B
go build -tags onnx -o $B/toolret ./cmd/toolret
T=$B/toolret
rm -rf $OUT/run $OUT/trec
mkdir -p $OUT/trec
V="-data $TL -holdout-tools 0.2 -holdout-seed $S"
start=$(date +%s)
/usr/bin/time -v $T train biencoder $V -synthetic $N -init $MODEL -run $OUT/run -epochs 1 -batch 32 -lr 5e-5 \
  -query-len 32 -tool-len 64 -dev 0.05 -test "" -backend $BE -quiet > $OUT/train.log 2>&1
{
  echo "trained in $(( $(date +%s) - start ))s, peak RSS $(grep 'Maximum resident' $OUT/train.log | awk '{print $NF}') KiB"
  grep -E 'train pairs|trained ' $OUT/train.log
  echo "synthetic queries: $(wc -l < $OUT/run/examples.jsonl); first three:"; head -3 $OUT/run/examples.jsonl
} | tee $OUT/summary.txt
E="$V -split test -cutoffs 1,3,5,10"
$T eval $E -method bm25 -save-run $OUT/trec/bm25.trec > $OUT/bm25.txt
$T eval $E -model $MODEL -backend $BE -save-run $OUT/trec/zeroshot.trec > $OUT/zeroshot.txt
$T eval $E -run $OUT/run -backend $BE -save-run $OUT/trec/synthetic.trec > $OUT/synthetic.txt
for f in bm25 zeroshot synthetic; do echo "== $f"; cat $OUT/$f.txt; done | tee -a $OUT/summary.txt
$T eval $E -compare $OUT/trec/zeroshot.trec,$OUT/trec/synthetic.trec | tee $OUT/compare-zeroshot.txt | tee -a $OUT/summary.txt
$T eval $E -compare $OUT/trec/bm25.trec,$OUT/trec/synthetic.trec | tee $OUT/compare-bm25.txt | tee -a $OUT/summary.txt
