#!/usr/bin/env bash
# After run.sh: MiniLM's and mpnet's 75-step models fused with BM25 as `make general` step 2
# does (exported at 256-token queries and tools, WiSE-FT 0; zscore, the dense weight tuned on
# the pooled dev split), each evaluated on that dev split.
# Usage: experiments/2026-11-30-general-starts/fuse.sh [OUT]   (OUT: run.sh's, default runs/starts75)
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
o=${1:-runs/starts75}
export TOOLRET_DATASETS="${TOOLRET_DATASETS:-$PWD/../shared/datasets}"
for n in minilm mpnet; do
  case $n in minilm) m=sentence-transformers/all-MiniLM-L6-v2 ;; mpnet) m=sentence-transformers/all-mpnet-base-v2 ;; esac
  d=$o/$n-wise-0
  [ -f "$d/config.json" ] || bin/toolret export -model "$o/$n" -interpolate "$m" -interpolate-weight 0 -query-len 256 -tool-len 256 -format hf -out "$d" >/dev/null
  [ -s "$o/$n-fusion-dev.txt" ] && continue
  s=$(date +%s)
  bin/toolret eval -data toollens:1,toolmix:1 -method fusion -runs "model:$d,bm25" -fusion zscore -weight dev \
    -first-stage "$o/$n" -split dev -backend "$be" > "$o/$n-fusion-dev.txt.tmp"
  mv "$o/$n-fusion-dev.txt.tmp" "$o/$n-fusion-dev.txt"
  echo "$n $(( $(date +%s) - s )) s"
done
for n in minilm mpnet; do echo "$n fused, pooled dev: $(evalrow "$o/$n-fusion-dev.txt" N@5 R@5)"; done
