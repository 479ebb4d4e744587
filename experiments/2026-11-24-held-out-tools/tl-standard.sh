#!/bin/bash
# ToolLens's own split (seen tools; README, "New tools"): BM25, the recipe's bi-encoder,
# pre-training + the warm-started bi-encoder, the word-bag bi-encoder, and their minmax and zscore hybrids with BM25
# (dense weight picked on the dev split); test metrics and one TREC file per system.
# Usage: experiments/2026-11-24-held-out-tools/tl-standard.sh
# Needs a -tags onnx build of cmd/toolret in $B (go build -tags onnx -o bin/toolret ./cmd/toolret).
set -euo pipefail
# The Makefile's Go (this machine's own is older): go build below needs it.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.4} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOFLAGS=${GOFLAGS:--buildvcs=false}
TL=${TL:-../shared/datasets/toollens}
B=${B:-bin}
R=${RUNS:-runs}/standard
BE=onnx:cpu,intra_threads=1
SIZES="-layers 2 -hidden 192 -heads 4 -vocab-size 8000"
WB="-data $TL -arch wordbag -hidden 768 -query-len 64 -tool-len 256 -vocab-size 8000 -batch 64 -epochs 3 -lr 1e-4 -symmetric -temperature 0.05 -backend $BE -quiet"
BI="-data $TL -batch 64 -epochs 5 -symmetric -temperature 0.05 -query-len 32 -tool-len 64 -backend $BE -quiet"
mkdir -p $R/trec
ev() { # run name
  $B/toolret eval -data $TL -run $R/$1 -cutoffs 1,3,5 -backend $BE -save-run $R/trec/$1.trec > $R/$1-eval.txt
  for f in minmax zscore; do
    $B/toolret eval -data $TL -method fusion -runs run:$R/$1,bm25 -fusion $f -cutoffs 1,3,5 -backend $BE -save-run $R/trec/$1-$f.trec > $R/$1-$f.txt
  done
}
$B/toolret eval -data $TL -method bm25 -cutoffs 1,3,5 -save-run $R/trec/bm25.trec > $R/bm25.txt
$B/toolret train biencoder $BI $SIZES -lr 1e-3 -run $R/be > $R/be.log 2>&1 && ev be
$B/toolret train pretrain -data $TL $SIZES -batch 64 -epochs 5 -max-steps 475 -lr 5e-4 -backend $BE -quiet -run $R/pt > $R/pt.log 2>&1
$B/toolret train biencoder $BI -init $R/pt -lr 5e-4 -run $R/be-pre > $R/be-pre.log 2>&1 && ev be-pre
$B/toolret train biencoder $WB -run $R/wb > $R/wb.log 2>&1 && ev wb
grep -H '^all' $R/*.txt
