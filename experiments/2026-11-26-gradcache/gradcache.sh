#!/usr/bin/env bash
# GradCache side by side: `train biencoder -mini-batch M` against sentence-transformers'
# CachedMultipleNegativesRankingLoss(mini_batch_size=M) (scripts/pretrained/st_finetune.py, in
# the venv of `make install-st`), and each against its whole-batch loss: the same checkpoint
# (all-MiniLM-L6-v2), ToolLens training pairs (toolret's dev queries held out of both), batch,
# lr 5e-5, 10% warm-up, query 32 / tool 64 tokens (sentence-transformers: 64 for both), STEPS
# optimizer steps. Prints a Markdown table: seconds per step (toolret: the steps of
# metrics.jsonl after the first, which compiles; sentence-transformers: its train() time over
# the steps) and peak RSS (the whole process: toolret's ends with a dev evaluation,
# sentence-transformers' with a test evaluation). Runs and logs go to $OUT.
#
#   experiments/2026-11-26-gradcache/gradcache.sh                          # batch 64 whole and in 16s, batch 256 in 32s
#   RUNS="64:0 64:16" STEPS=4 SIDES=toolret experiments/2026-11-26-gradcache/gradcache.sh
#   LOCK=/path/to/lock experiments/2026-11-26-gradcache/gradcache.sh       # each run under flock LOCK
#   SIDES=toolret QLEN=64 ARGS="-feedback fb.jsonl" experiments/2026-11-26-gradcache/gradcache.sh   # feedback training
# QLEN (default 32) is toolret's -query-len, ARGS more train biencoder flags.
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
DATA=${DATA:-../shared/datasets/toollens}
MODEL=${MODEL:-sentence-transformers/all-MiniLM-L6-v2}
STEPS=${STEPS:-5}
QLEN=${QLEN:-32}
read -r -a extra <<<"${ARGS:-}"
RUNS=${RUNS:-64:0 64:16 256:32}
SIDES=${SIDES:-toolret st}
OUT=${OUT:-runs/gradcache}
PY=${PY:-${TOOLRET_CACHE:-$HOME/.cache/toolret}/venv/bin/python}
LOCKCMD=()
if [[ -n "${LOCK:-}" ]]; then LOCKCMD=(flock "$LOCK"); fi
mkdir -p "$OUT"
rows=()
failed=0
for r in $RUNS; do
	b=${r%:*} m=${r#*:}
	run=$OUT/toolret-b$b-m$m
	if [[ " $SIDES " == *" toolret "* ]]; then
		rm -rf "$run"
		"${LOCKCMD[@]}" /usr/bin/time -f '%M' -o "$run.rss" bin/toolret train biencoder -data "$DATA" -init "$MODEL" -run "$run" \
			-batch "$b" -mini-batch "$m" -max-steps "$STEPS" -eval-every "$STEPS" -lr 5e-5 -warmup 0.1 -query-len "$QLEN" -tool-len 64 \
			-test "" -backend "$be" -quiet "${extra[@]}" >"$run.log" 2>&1 || { echo "toolret batch $b mini-batch $m failed: $run.log" >&2; tail -5 "$run.log" >&2; failed=1; continue; }
		rows+=("$(python3 - "$run" "$b" "$m" <<'PY'
import json, statistics, sys
run, b, m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
recs = [json.loads(l) for l in open(run + "/metrics.jsonl")]
secs = [b / r["examples_per_sec"] for r in recs]
rss = int(open(run + ".rss").read().split()[-1]) / 2**20
print(f"| {b} | {m or 'whole'} | toolret ({'GradCache' if m else 'InfoNCE'}) | {recs[0]['loss']:.4f} | {statistics.median(secs[1:]):.2f} | {rss:.2f} |")
PY
)")
	fi
	if [[ " $SIDES " == *" st "* ]]; then
		if [[ ! -f "$run/run.json" ]]; then
			echo "sentence-transformers batch $b mini-batch $m: no toolret run $run to take the flags from" >&2
			failed=1
			continue
		fi
		st=$OUT/st-b$b-m$m
		rm -rf "$st"
		mkdir -p "$st"
		HF_HUB_OFFLINE=1 "${LOCKCMD[@]}" "$PY" scripts/pretrained/st_finetune.py "$MODEL" "$DATA" "$run" "$st" >"$st.log" 2>&1 ||
			{ echo "sentence-transformers batch $b mini-batch $m failed: $st.log" >&2; tail -5 "$st.log" >&2; failed=1; continue; }
		rows+=("$(python3 - "$st" "$b" "$m" "$STEPS" <<'PY'
import json, sys
st, b, m, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
r = json.load(open(st + "/result.json"))
print(f"| {b} | {m or 'whole'} | sentence-transformers ({r['loss']}) | | {r['train_seconds'] / steps:.2f} | {r['peak_rss_mib'] / 1024:.2f} |")
PY
)")
	fi
done
echo "| batch | mini-batch | system | first loss | s/step | peak RSS, GiB |"
echo "|---|---|---|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
if [[ $failed != 0 ]]; then
	echo "gradcache: some runs failed (above); the table lacks their rows" >&2
	exit 1
fi
