#!/usr/bin/env bash
# Which pre-trained start for the general model (issue #55 item 4), all three that `make models`
# provides at one budget two CPU cores allow: all-MiniLM-L6-v2, all-mpnet-base-v2 and
# bge-small-en-v1.5 (with its query instruction), each fine-tuned as `make general` step 1 does
# (toollens:1,toolmix:1, batch 64, lr 5e-5 decaying over the run, 32-token queries, 64-token
# tools) for STEPS steps, then compared on the pooled dev split of that mix (the training's own
# dev evaluation at its last step, N@5 pooled and per library): the selection signal.
# mpnet's batch of 64 does not fit 24 GiB in one pass (killed at 24 GiB RSS): mpnet and
# bge-small encode it 32 rows at a time (-mini-batch 32, GradCache: the same step, one more
# forward pass); MiniLM in one pass.
# Then each pre-trained start, untrained, on the zero-shot dev split of
# experiments/2026-11-30-zeroshot-dev (four toolmix libraries, ranked within each library;
# 256-token queries, 128-token tools): a second signal on the starts alone (the fine-tuned
# models here trained on those libraries, so they are not evaluated there).
# Usage: experiments/2026-11-30-general-starts/run.sh [OUT]   (env: STEPS, default 75)
# Needs ../shared, `make models`, ONNX Runtime for speed.
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
steps=${STEPS:-75}
out=${1:-runs/starts$steps}
export TOOLRET_DATASETS="${TOOLRET_DATASETS:-$PWD/../shared/datasets}"
bge="Represent this sentence for searching relevant passages: "
echo "cpu: $(lscpu | grep -o 'avx2\|avx512_bf16\|amx_bf16' | sort -u | tr '\n' ' ')"
mkdir -p "$out"
train() { # NAME MODEL [flags]
  local n=$1 m=$2; shift 2
  [ -f "$out/$n/summary.json" ] && return
  rm -rf "${out:?}/$n"
  /usr/bin/time -v bin/toolret train biencoder -data toollens:1,toolmix:1 -init "$m" -run "$out/$n" -batch 64 \
    -max-steps "$steps" -eval-every "$steps" -lr 5e-5 -query-len 32 -tool-len 64 -test "" -backend "$be" "$@" \
    2> "$out/$n.log" || { tail -20 "$out/$n.log" >&2; exit 1; }
}
train minilm sentence-transformers/all-MiniLM-L6-v2
train mpnet sentence-transformers/all-mpnet-base-v2 -mini-batch 32
train bge BAAI/bge-small-en-v1.5 -mini-batch 32 -query-prompt "$bge"
for n in minilm mpnet bge; do
  echo "$n: $(grep -E "Elapsed \(wall" "$out/$n.log" | sed 's/.*): //') wall, peak RSS $(grep -E "Maximum resident" "$out/$n.log" | awk '{printf "%.2f GiB", $NF/1048576}')"
done
# The pooled dev table: the last dev evaluation of each run.
python3 - "$out" "$steps" <<'PY' | tee "$out/dev.md"
import json, sys
out, steps = sys.argv[1], sys.argv[2]
names = {"minilm": "all-MiniLM-L6-v2", "mpnet": "all-mpnet-base-v2", "bge": "bge-small-en-v1.5"}
dev = {}
for n in names:
    last = [json.loads(l) for l in open(f"{out}/{n}/metrics.jsonl") if '"dev_ndcg@5"' in l][-1]
    dev[n] = last
libs = sorted(k[len("dev_lib/"):-len("/ndcg@5")] for k in dev["minilm"] if k.startswith("dev_lib/") and k.endswith("/ndcg@5"))
print(f"| dev N@5 at step {steps} | pooled | R@5 | " + " | ".join(l.replace("toolmix/", "") for l in libs) + " | macro |")
print("|---|" + "---:|" * (len(libs) + 3))
for n, label in names.items():
    d = dev[n]
    per = [d[f"dev_lib/{l}/ndcg@5"] for l in libs]
    print(f"| {label} | {d['dev_ndcg@5']:.2f} | {d['dev_recall@5']:.2f} | " + " | ".join(f"{v:.1f}" for v in per) + f" | {sum(per)/len(per):.2f} |")
PY
zs=toolmix/acebench:1,toolmix/nestful:1,toolmix/tooltalk:1,toolmix/workbench:1
for n in minilm mpnet bge; do
  f="$out/zsdev-$n.txt"
  [ -s "$f" ] && continue
  case $n in
    minilm) args=(-model sentence-transformers/all-MiniLM-L6-v2) ;;
    mpnet) args=(-model sentence-transformers/all-mpnet-base-v2) ;;
    bge) args=(-model BAAI/bge-small-en-v1.5 -query-prompt "$bge") ;;
  esac
  bin/toolret eval -data "$zs" "${args[@]}" -query-len 256 -tool-len 128 -split train -backend "$be" -subsets > "$f.tmp"
  mv "$f.tmp" "$f"
done
for n in minilm mpnet bge; do echo "zero-shot dev, pre-trained $n: $(evalrow "$out/zsdev-$n.txt" R@1 R@5 N@5)"; done
