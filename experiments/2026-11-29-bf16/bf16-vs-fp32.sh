#!/usr/bin/env bash
# Does bf16 mixed precision (-precision bf16) train as well as fp32? The same small bi-encoder is
# trained from scratch on ToolLens twice on XLA's CPU plugin, same seed and flags (so the same
# vocabulary, dev split, batches and initial weights), once with -precision fp32 and once with
# -precision bf16; then each run is evaluated on ToolLens test in fp32 (eval -run, go backend,
# rankings saved with -save-run) and the two rankings are compared query by query (eval
# -compare: paired bootstrap interval of B - A and a paired randomization test), and the loss
# curves step by step.
#
#   experiments/2026-11-29-bf16/bf16-vs-fp32.sh     # STEPS=300 RUNS=runs/bf16 LOCK=
#   INIT=sentence-transformers/all-MiniLM-L6-v2 STEPS=30 RUNS=runs/bf16-minilm experiments/2026-11-29-bf16/bf16-vs-fp32.sh
#   SKIP_TRAIN=1 experiments/2026-11-29-bf16/bf16-vs-fp32.sh   # only the comparison
#
# Needs a C compiler (cgo) and XLA's CPU plugin (`make install-xla`).
set -euo pipefail
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.4} GOEXPERIMENT=simd GOFLAGS=-buildvcs=false
TL=${TL:-../shared/datasets/toollens}
R=${RUNS:-runs/bf16}
STEPS=${STEPS:-300}
LOCK=${LOCK:-}   # a file to flock around each heavy step (shared machines), empty: none
lock() { if [[ -n $LOCK ]]; then flock "$LOCK" "$@"; else "$@"; fi; }
FLAGS="-data $TL -layers 2 -hidden 128 -heads 2 -intermediate 512 -epochs 1 -max-steps $STEPS
	-batch 64 -pad-multiple 32 -seed 1 -test \"\" -quiet -backend xla:cpu"
INIT=${INIT:-}   # a pre-trained encoder to fine-tune instead (e.g. sentence-transformers/all-MiniLM-L6-v2)
if [[ -n $INIT ]]; then
	# one input shape (-pad-multiple 0): one XLA compilation per run
	FLAGS="-data $TL -init $INIT -epochs 1 -max-steps $STEPS -batch 32 -pad-multiple 0 -query-len 32
	-tool-len 64 -lr 5e-5 -seed 1 -test \"\" -quiet -backend xla:cpu"
fi

go build -tags xla -o bin/toolret ./cmd/toolret
mkdir -p "$R"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs);" \
	"bf16 flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx512_bf16|amx_bf16)$' | xargs)"
for p in fp32 bf16; do
	[[ -n ${SKIP_TRAIN:-} ]] && break
	rm -rf "${R:?}/$p"
	echo "load average before $p: $(cut -d' ' -f1-3 /proc/loadavg)"
	# shellcheck disable=SC2086
	eval lock /usr/bin/time -f '"wall %e s, user %U s, sys %S s"' \
		bin/toolret train biencoder $FLAGS -precision "$p" -run "$R/$p" >"$R/$p.log" 2>&1 ||
		{ echo "train $p failed: see $R/$p.log"; tail -5 "$R/$p.log"; exit 1; }
	echo "train $p: $(grep -E '^precision|^trained' "$R/$p.log" | xargs) | $(tail -1 "$R/$p.log")"
	lock bin/toolret eval -data "$TL" -run "$R/$p" -save-run "$R/$p.trec" -run-tag "$p" >"$R/$p.eval" 2>&1 ||
		{ echo "eval $p failed: see $R/$p.eval"; exit 1; }
done

python3 - "$R/fp32" "$R/bf16" <<'PY'
import json, sys
def curve(d):
    return {r["step"]: r["loss"] for r in map(json.loads, open(d + "/metrics.jsonl")) if "loss" in r}
a, b = curve(sys.argv[1]), curve(sys.argv[2])
steps = sorted(a)
assert steps == sorted(b), "the runs have different steps"
rel = [abs(b[s] - a[s]) / a[s] for s in steps]
print(f"loss: max |bf16-fp32|/fp32 {max(rel):.4f}, mean {sum(rel)/len(rel):.4f}; "
      f"bf16 below fp32 at {sum(b[s] < a[s] for s in steps)} of {len(steps)} steps")
w = max(1, len(steps) // 6)
print("steps      fp32 mean loss  bf16 mean loss")
for i in range(0, len(steps), w):
    xs = steps[i:i + w]
    print(f"{xs[0]:>4}-{xs[-1]:<4}  {sum(a[s] for s in xs)/len(xs):14.4f}  {sum(b[s] for s in xs)/len(xs):14.4f}")
for d in sys.argv[1:]:
    s = json.load(open(d + "/summary.json"))
    print(f"{d}: {s['steps']} steps in {s['seconds']:.0f} s ({s.get('compile_seconds', 0):.0f} s compiling)")
PY
cat "$R/fp32.eval" "$R/bf16.eval"
lock bin/toolret eval -data "$TL" -compare "$R/fp32.trec,$R/bf16.trec" | tee "$R/compare.txt"
