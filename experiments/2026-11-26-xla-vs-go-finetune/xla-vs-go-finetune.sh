#!/usr/bin/env bash
# Does training on XLA equal training on the go backend? The same small bi-encoder is trained
# from scratch on ToolLens twice, same seed and flags (so the same vocabulary, dev split and
# batches), once with -backend go and once with -backend xla:cpu; then:
#   - the two loss curves (metrics.jsonl) step by step: max and mean relative difference, raw
#     and over a 20-step moving average, and the final losses;
#   - each run evaluated on ToolLens test (eval -run, on the go backend, rankings saved with
#     -save-run) and the two saved rankings compared query by query (eval -compare: paired
#     bootstrap interval of B - A and a paired randomization test).
# The draws made inside the graph, the initial weights and the dropout masks (BERT's 0.1), come
# from each backend's random-bit generator (the go backend's RNGBitGenerator is PCG, XLA's is
# Philox), so the two runs are like two seeds of one recipe: they can only agree within noise.
#
#   experiments/2026-11-26-xla-vs-go-finetune/xla-vs-go-finetune.sh     # STEPS=400 RUNS=runs/xla-vs-go LOCK=/work/heavy.lock
#   SKIP_TRAIN=1 experiments/2026-11-26-xla-vs-go-finetune/xla-vs-go-finetune.sh   # only the comparison, of the runs in $RUNS
#
# Needs a C compiler (cgo) and XLA's CPU plugin (`make install-xla`).
set -euo pipefail
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.4} GOEXPERIMENT=simd GOFLAGS=-buildvcs=false
TL=${TL:-../shared/datasets/toollens}
R=${RUNS:-runs/xla-vs-go}
STEPS=${STEPS:-400}
LOCK=${LOCK:-}   # a file to flock around each heavy step (shared machines), empty: none
lock() { if [[ -n $LOCK ]]; then flock "$LOCK" "$@"; else "$@"; fi; }
FLAGS="-data $TL -layers 2 -hidden 128 -heads 2 -intermediate 512 -epochs 1 -max-steps $STEPS
	-batch 64 -pad-multiple 32 -seed 1 -quiet"

go build -tags xla -o bin/toolret ./cmd/toolret
mkdir -p "$R"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for b in go xla:cpu; do
	[[ -n ${SKIP_TRAIN:-} ]] && break
	n=${b%%:*}
	rm -rf "${R:?}/$n"
	echo "load average before $b: $(cut -d' ' -f1-3 /proc/loadavg)"
	# shellcheck disable=SC2086
	lock /usr/bin/time -f "wall %e s, user %U s, sys %S s" \
		bin/toolret train biencoder $FLAGS -backend "$b" -run "$R/$n" >"$R/$n.log" 2>&1 ||
		{ echo "train $b failed: see $R/$n.log"; tail -5 "$R/$n.log"; exit 1; }
	echo "train $b: $(tail -1 "$R/$n.log")"
	lock bin/toolret eval -data "$TL" -run "$R/$n" -save-run "$R/$n.trec" -run-tag "$n" >"$R/$n.eval" 2>&1 ||
		{ echo "eval $b failed: see $R/$n.eval"; exit 1; }
done

python3 - "$R/go" "$R/xla" <<'PY'
import json, sys
def curve(d):
    return {r["step"]: r["loss"] for r in map(json.loads, open(d + "/metrics.jsonl")) if "loss" in r}
def smooth(xs, w=20):
    return [sum(xs[max(0, i - w + 1):i + 1]) / len(xs[max(0, i - w + 1):i + 1]) for i in range(len(xs))]
a, b = curve(sys.argv[1]), curve(sys.argv[2])
steps = sorted(a)
assert steps == sorted(b), "the runs have different steps"
la, lb = [a[s] for s in steps], [b[s] for s in steps]
for name, xa, xb in (("raw", la, lb), ("20-step mean", smooth(la), smooth(lb))):
    rel = [abs(y - x) / abs(x) for x, y in zip(xa, xb)]
    i = max(range(len(rel)), key=rel.__getitem__)
    print(f"loss {name}: max |xla-go|/go {rel[i]:.4f} at step {steps[i]}, mean {sum(rel)/len(rel):.4f}, "
          f"xla below go at {sum(y < x for x, y in zip(xa, xb))} of {len(rel)} steps")
rel = [abs(b[s + 1] - b[s]) / b[s] for s in steps[:-1]]
print(f"yardstick, the xla run alone: |loss(step+1)-loss(step)|/loss(step) mean {sum(rel)/len(rel):.4f}, max {max(rel):.4f}")
print("steps      go mean loss  xla mean loss  (xla-go)/go")
w = max(1, len(steps) // 8)
for i in range(0, len(steps), w):
    ma, mb = sum(la[i:i + w]) / len(la[i:i + w]), sum(lb[i:i + w]) / len(lb[i:i + w])
    print(f"{steps[i]:>4}-{steps[min(i + w, len(steps)) - 1]:<4}  {ma:12.4f}  {mb:13.4f}  {(mb - ma) / ma:+11.4f}")
print("first steps' losses, go / xla:", " ".join(f"{a[s]:.4f}/{b[s]:.4f}" for s in steps[:5]))
keys = ("recall@3", "recall@5", "ndcg@3", "ndcg@5", "comp@3", "comp@5")
for d in sys.argv[1:]:
    t = json.load(open(d + "/test_metrics.json"))["text"]
    m = json.loads(open(d + "/metrics.jsonl").readlines()[-1])
    print(f"{d}: end-of-training test (own backend)", " ".join(f"{k} {t[k]:.2f}" for k in keys),
          f"| dev ndcg@5 {m['dev_ndcg@5']:.2f}")
PY
cat "$R/go.eval" "$R/xla.eval"
lock bin/toolret eval -data "$TL" -compare "$R/go.trec,$R/xla.trec" | tee "$R/compare.txt"
