#!/bin/bash
# ToolLens with 20% of the tools held out (README, "New tools"): per hold-out seed, BM25, the
# recipe's bi-encoder, pre-training + the warm-started bi-encoder, and their hybrids with BM25
# (minmax and zscore, dense weight picked on the held-out-tool dev split); unseen-tool test
# metrics and one TREC file per system for eval -compare.
# Usage: experiments/2026-11-24-held-out-tools/tl-holdout.sh SEED [tq|frz|wb]   (tq: also the -tool-queries 4 variant;
# frz: also -freeze-embeddings, and it with -tool-queries 4 -tool-dropout 0.2; wb: only the
# word-bag bi-encoder, -arch wordbag, lr 1e-4 chosen on seed 1's dev split, and its hybrids)
# Needs a -tags onnx build of cmd/toolret in $B (go build -tags onnx -o bin/toolret ./cmd/toolret).
set -euo pipefail
# The Makefile's Go (this machine's own is older): go build below needs it.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.4} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOFLAGS=${GOFLAGS:--buildvcs=false}
S=${1:?usage: $0 SEED [tq]}
TL=${TL:-../shared/datasets/toollens}
B=${B:-bin}
R=${RUNS:-runs}/holdout
BE=onnx:cpu,intra_threads=1
V="-data $TL -holdout-tools 0.2 -holdout-seed $S"
BI="$V -batch 64 -epochs 5 -symmetric -temperature 0.05 -query-len 32 -tool-len 64 -backend $BE -quiet"
SIZES="-layers 2 -hidden 192 -heads 4 -vocab-size 8000"
WB="$V -arch wordbag -hidden 768 -query-len 64 -tool-len 256 -vocab-size 8000 -batch 64 -epochs 3 -lr 1e-4 -symmetric -temperature 0.05 -backend $BE -quiet"
mkdir -p $R/trec
ev() { # run name
  $B/toolret eval -data $TL -run $R/$1 -cutoffs 1,3,5 -backend $BE -save-run $R/trec/$1.trec > $R/$1-eval.txt
  $B/toolret eval -data $TL -method fusion -runs run:$R/$1,bm25 -fusion minmax -cutoffs 1,3,5 -backend $BE -save-run $R/trec/$1-hyb.trec > $R/$1-hyb.txt
  $B/toolret eval -data $TL -method fusion -runs run:$R/$1,bm25 -fusion zscore -cutoffs 1,3,5 -backend $BE -save-run $R/trec/$1-z.trec > $R/$1-z.txt
}
if [ "${2:-}" = wb ]; then
  $B/toolret train biencoder $WB -run $R/wb-h$S > $R/wb-h$S.log 2>&1 && ev wb-h$S
  grep -H '^all' $R/wb-h$S*.txt
  exit
fi
$B/toolret eval $V -method bm25 -cutoffs 1,3,5 -save-run $R/trec/bm25-h$S.trec > $R/bm25-h$S.txt
$B/toolret train biencoder $BI $SIZES -lr 1e-3 -run $R/be-h$S > $R/be-h$S.log 2>&1 && ev be-h$S
$B/toolret train pretrain $V $SIZES -batch 64 -epochs 5 -max-steps 475 -lr 5e-4 -backend $BE -quiet -run $R/pt-h$S > $R/pt-h$S.log 2>&1
$B/toolret train biencoder $BI -init $R/pt-h$S -lr 5e-4 -run $R/be-h$S-pre > $R/be-h$S-pre.log 2>&1 && ev be-h$S-pre
if [ "${2:-}" = tq ]; then
  $B/toolret train biencoder $BI $SIZES -lr 1e-3 -tool-queries 4 -run $R/be-h$S-tq4 > $R/be-h$S-tq4.log 2>&1 && ev be-h$S-tq4
fi
if [ "${2:-}" = frz ]; then
  $B/toolret train biencoder $BI $SIZES -lr 1e-3 -freeze-embeddings -run $R/be-h$S-frz > $R/be-h$S-frz.log 2>&1 && ev be-h$S-frz
  $B/toolret train biencoder $BI $SIZES -lr 1e-3 -freeze-embeddings -tool-queries 4 -tool-dropout 0.2 -run $R/be-h$S-frzaug > $R/be-h$S-frzaug.log 2>&1 && ev be-h$S-frzaug
fi
grep -H '^all' $R/*-h$S*.txt
