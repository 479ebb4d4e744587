#!/usr/bin/env bash
# Two general models fused: is an ensemble of the MiniLM and bge-small general models (each
# `make general`'s dense part, WiSE-FT 0) with BM25 better than either recipe? The weights of
# the three rankings (zscore, steps of 0.1) are picked on the pooled dev split of
# toollens:1,toolmix:1 (the split runs/general-ms2/ft recorded: both runs trained on the same
# split), per-clause retrieval is checked on that split, and only then the zero-shot suite is
# run (never used for a choice).
# Usage: experiments/2026-11-29-general-ensemble/run.sh [OUTDIR]   (needs runs/general-ms2 and
# runs/general-bge from `make general`, ../shared, ONNX Runtime: `make install-onnx`)
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
out=${1:-runs/general-ensemble}
a=${A:-runs/general-ms2} b=${B:-runs/general-bge}
export TOOLRET_DATASETS="${TOOLRET_DATASETS:-$PWD/../shared/datasets}"
mkdir -p "$out"
echo "cpu: $(lscpu | grep -o 'avx2\|avx512_bf16\|amx_bf16' | sort -u | tr '\n' ' ')"
runs="model:$a/wise-0,model:$b/wise-0,bm25"
common=(-data toollens:1,toolmix:1 -method fusion -runs "$runs" -fusion zscore -first-stage "$a/ft" -split dev -backend "$be" -subsets)
[ -s "$out/dev-weights.txt" ] || { bin/toolret eval "${common[@]}" -weight dev > "$out/dev-weights.txt.tmp" && mv "$out/dev-weights.txt.tmp" "$out/dev-weights.txt"; }
w=$(sed -n 's/.* weights \([0-9.,]*\) on dev.*/\1/p' "$out/dev-weights.txt" | head -1)
[ -n "$w" ] || { echo "no dev weights in $out/dev-weights.txt" >&2; exit 1; }
echo "dev weights (MiniLM, bge-small, BM25): $w"
[ -s "$out/dev-clauses.txt" ] || { bin/toolret eval "${common[@]}" -weight "$w" -clauses > "$out/dev-clauses.txt.tmp" && mv "$out/dev-clauses.txt.tmp" "$out/dev-clauses.txt"; }
grep -h "^all" "$out/dev-weights.txt" "$out/dev-clauses.txt"
bin/toolret eval -suite zeroshot -method fusion -runs "$runs" -fusion zscore -weight "$w" -clauses -no-start -backend "$be" -json > "$out/suite.json"
python3 - "$out/suite.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("| R@5 | " + " | ".join(r["sets"]) + " | mean |")
for s in r["systems"]:
    print(f'| {s["name"]} | ' + " | ".join(f'{x["metrics"]["recall@5"]:.2f}' for x in s["rows"]) + f' | {s["mean"]["recall@5"]:.2f} |')
PY
