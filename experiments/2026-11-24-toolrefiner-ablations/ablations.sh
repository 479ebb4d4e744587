#!/usr/bin/env bash
# ToolRefiner ablations on one dataset and one first stage: N, loss, missing positives, slot
# order, slot positions, warm start. Each row is one `train refiner` run; the table is the test
# split of each run's test_metrics.json (first stage and + refiner on the same lists).
#
#   experiments/2026-11-24-toolrefiner-ablations/ablations.sh RETRIEVER_RUN OUT_DIR [extra train flags...]
#
# e.g. experiments/2026-11-24-toolrefiner-ablations/ablations.sh runs/biencoder-default runs/refiner-ablations -epochs 12
#
# ROWS="base n8" runs only those rows (two shells with disjoint ROWS share the machine's cores);
# a row whose OUT_DIR/NAME/test_metrics.json exists is kept (a run made elsewhere with the same
# flags can be linked in, e.g. ln -s ../ref-mlc OUT_DIR/n64).
set -euo pipefail
# The Makefile's Go (this machine's own is older): go build below needs it.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.4} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOFLAGS=${GOFLAGS:--buildvcs=false}
ret=${1:?retriever run}; out=${2:?output dir}; shift 2
train=${TRAIN:-go run ./cmd/toolret train}
mkdir -p "$out"
declare -A rows=(
  [base]="-n 16 -warm-start"
  [n8]="-n 8 -warm-start"
  [n32]="-n 32 -warm-start"
  [n64]="-n 64 -warm-start"
  [bce]="-n 16 -warm-start -loss bce"
  [softmax-norm]="-n 16 -warm-start -loss softmax-norm"
  [missing-drop]="-n 16 -warm-start -missing drop"
  [order-rank]="-n 16 -warm-start -order rank"
  [order-rank-learned]="-n 16 -warm-start -order rank -slot-positions learned"
  [scratch]="-n 16"
)
all="base n8 n32 n64 bce softmax-norm missing-drop order-rank order-rank-learned scratch"
for name in ${ROWS:-$all}; do
  [ -n "${rows[$name]+x}" ] || { echo "ablations: unknown row $name (rows: $all)" >&2; exit 2; }
  [ -f "$out/$name/test_metrics.json" ] && continue
  [ -L "$out/$name" ] || rm -rf "${out:?}/$name"
  echo "== $name: ${rows[$name]}" >&2
  $train refiner -first-stage "$ret" ${rows[$name]} -quiet -run "$out/$name" "$@" > "$out/$name.log" 2>&1
done
python3 - "$out" <<'P'
import json, sys, os
out = sys.argv[1]
cols = ["recall@3", "recall@5", "ndcg@3", "ndcg@5", "comp@3", "comp@5"]
print("| run | " + " | ".join(c.replace("recall@", "R@").replace("ndcg@", "N@").replace("comp@", "C@") for c in cols) + " | dev N@5 |")
print("|---" * (len(cols) + 2) + "|")
first = None
for name in ["base", "n8", "n32", "n64", "bce", "softmax-norm", "missing-drop", "order-rank", "order-rank-learned", "scratch"]:
    p = os.path.join(out, name, "test_metrics.json")
    if not os.path.exists(p):
        continue
    m = json.load(open(p))
    fs = [k for k in m if k.startswith("first stage")][0]
    if first is None:
        first = m[fs]
        print("| first stage | " + " | ".join("%.2f" % first[c] for c in cols) + " | |")
    r = m["+ refiner"]
    dev = json.load(open(os.path.join(out, name, "summary.json")))["best_metrics"].get("ndcg@5", float("nan"))
    print("| %s | " % name + " | ".join("%.2f" % r[c] for c in cols) + " | %.2f |" % dev)
P
