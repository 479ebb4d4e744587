#!/bin/bash
# Learning from use, simulated on ToolLens's held-out tools (docs/learning-from-use.md).
#
#  1. bench usage-data: the view -holdout-tools 0.2 -holdout-seed SEED; its test queries (the
#     queries of tools no model trained on) in a fixed seeded order; the first half of each
#     held-out tool's queries is "early", the rest "later". The library is every ToolLens tool.
#  2. serve -library: the real gateway, zero-shot MiniLM over the library, usage log on.
#  3. bench usage-agent: each early query is searched (POST /v1/search, k 5); for each relevant
#     tool among the 5 shown, the agent runs it (a function-list tool: its own runtime runs it)
#     and reports the success (POST /v1/feedback with the search id); nothing else is called.
#  4. train biencoder -usage LOG: MiniLM fine-tuned on the log (reported tools positive, shown
#     and not reported hard negatives), 1 epoch.
#  5. R@K/NDCG@K on the later queries: BM25, zero-shot MiniLM (before), fine-tuned (after),
#     each saved as TREC, and paired comparisons (eval -compare).
#
# Usage: flock /work/heavy.lock scripts/usage/simulate.sh [SEED]   (OUT=runs/usage-sim-hSEED)
set -euo pipefail
# The Makefile's Go (this machine's own is older): go build below needs it.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.4} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOFLAGS=${GOFLAGS:--buildvcs=false}
S=${1:-1}
TL=${TL:-../shared/datasets/toollens}
MODEL=${MODEL:-sentence-transformers/all-MiniLM-L6-v2}
OUT=${OUT:-runs/usage-sim-h$S}
PORT=${PORT:-18931}
BE=${BE:-onnx}
B=$OUT/bin
mkdir -p $B
go build -tags onnx -o $B/toolret ./cmd/toolret
T=$B/toolret
rm -rf $OUT/data $OUT/tools.jsonl $OUT/tools.toolret $OUT/run $OUT/trec
mkdir -p $OUT/trec
$T bench usage-data -data $TL -holdout-tools 0.2 -holdout-seed $S -used 0.5 -seed 1 -out $OUT | tee $OUT/summary.txt

start=$(date +%s)
$T serve -library $OUT/tools.jsonl -model $MODEL -addr 127.0.0.1:$PORT -backend $BE > $OUT/serve.log 2>&1 &
SERVE=$!
trap 'kill $SERVE 2>/dev/null || true' EXIT
until curl -sf http://127.0.0.1:$PORT/healthz > /dev/null; do
  kill -0 $SERVE 2>/dev/null || { cat $OUT/serve.log; exit 1; }
  sleep 1
done
echo "gateway up after $(( $(date +%s) - start ))s (zero-shot index of the library built at start)" | tee -a $OUT/summary.txt
$T bench usage-agent -addr http://127.0.0.1:$PORT -data $OUT/data -split early -k 5 | tee -a $OUT/summary.txt
kill $SERVE; wait $SERVE 2>/dev/null || true
trap - EXIT
LOG=$OUT/tools.toolret/usage.jsonl
echo "usage log: $(wc -l < $LOG) records" | tee -a $OUT/summary.txt

start=$(date +%s)
/usr/bin/time -v $T train biencoder -data $OUT/data -usage $LOG -init $MODEL -run $OUT/run -epochs 1 -batch 32 -lr 5e-5 \
  -query-len 32 -tool-len 64 -test later -backend $BE -quiet > $OUT/train.log 2>&1
echo "trained in $(( $(date +%s) - start ))s, peak RSS $(grep 'Maximum resident' $OUT/train.log | awk '{print $NF}') KiB" | tee -a $OUT/summary.txt
grep -E '^usage log|train pairs|trained ' $OUT/train.log | tee -a $OUT/summary.txt

E="-data $OUT/data -split later -cutoffs 1,3,5,10"
$T eval $E -method bm25 -save-run $OUT/trec/bm25.trec > $OUT/bm25.txt
$T eval $E -model $MODEL -backend $BE -save-run $OUT/trec/zeroshot.trec > $OUT/zeroshot.txt
$T eval $E -run $OUT/run -backend $BE -save-run $OUT/trec/usage.trec > $OUT/usage.txt
for f in bm25 zeroshot usage; do echo "== $f"; cat $OUT/$f.txt; done | tee -a $OUT/summary.txt
$T eval $E -compare $OUT/trec/zeroshot.trec,$OUT/trec/usage.trec | tee $OUT/compare-zeroshot.txt | tee -a $OUT/summary.txt
$T eval $E -compare $OUT/trec/bm25.trec,$OUT/trec/usage.trec | tee $OUT/compare-bm25.txt | tee -a $OUT/summary.txt
