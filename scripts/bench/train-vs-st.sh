#!/usr/bin/env bash
# The training table of docs/benchmarks.md: toolret's backends against sentence-transformers
# (scripts/bench/st_train.py, in the venv of `make install-st`) on the all-MiniLM-L6-v2,
# bge-small-en-v1.5 and BERT-base fine-tuning shapes, batch 32 and 64, query 32 + tool 128
# tokens with ToolLens lengths; every row of a shape and batch comes from one `toolret bench
# train` run (both sides in it). Prints a Markdown table with the ratios to stdout; the raw
# outputs go to $OUT (default runs/train-vs-st).
#
#   scripts/bench/train-vs-st.sh                       # all shapes, batch 32 and 64
#   SHAPES=minilm BATCHES=32 STEPS=3 scripts/bench/train-vs-st.sh
#   LOCK=/path/to/lock scripts/bench/train-vs-st.sh    # each run under flock LOCK
#
# BACKENDS (default go,onnx; with xla the binary is built with -tags onnx,xla), STEPS (timed steps, default 2),
# WARMUP (default 1), THREADS (default: all CPUs, torch.set_num_threads and GOMAXPROCS),
# ENCODE (tool texts encoded, default 64), TOOLRET (a built binary; default: built with
# -tags onnx (onnx,xla) into bin/toolret-bench), ARGS (more bench train flags).
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.4} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOFLAGS=${GOFLAGS:--buildvcs=false}
SHAPES=${SHAPES:-minilm bge-small bert-base}
BATCHES=${BATCHES:-32 64}
BACKENDS=${BACKENDS:-go,onnx}
STEPS=${STEPS:-2}
WARMUP=${WARMUP:-1}
THREADS=${THREADS:-$(nproc)}
ENCODE=${ENCODE:-64}
OUT=${OUT:-runs/train-vs-st}
mkdir -p "$OUT"
if [[ -z "${TOOLRET:-}" ]]; then
	TOOLRET=bin/toolret-bench
	tags=onnx
	[[ ",$BACKENDS," == *,xla* ]] && tags=onnx,xla
	go build -tags "$tags" -o "$TOOLRET" ./cmd/toolret
fi
lock=()
[[ -n "${LOCK:-}" ]] && lock=(flock "$LOCK")

echo "toolret bench train -vs st, $(date -u +%Y-%m-%d), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)), $THREADS threads each side, $STEPS timed steps after $WARMUP warm-up"
echo
echo "| shape | batch | system | tokens/s | s/step | CPU s/step | GFLOP/s | fp32 matmul peak, GFLOP/s | peak RSS, MiB | encode texts/s | tokens/s vs ST | tokens per CPU s vs ST | encode vs ST |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for shape in $SHAPES; do
	for batch in $BATCHES; do
		log="$OUT/$shape-$batch.txt"
		start=$SECONDS
		"${lock[@]}" "$TOOLRET" bench train -shape "$shape" -batch "$batch" -steps "$STEPS" -warmup "$WARMUP" \
			-threads "$THREADS" -encode-texts "$ENCODE" -backends "$BACKENDS" ${ARGS:-} >"$log" 2>&1 || true
		echo "$shape batch $batch: $((SECONDS - start)) s, $log" >&2
		awk -v shape="$shape" -v batch="$batch" '
			/^(toolret-[^ ]+|sentence-transformers) +[0-9]/ && !/bf16/ {
				n = $1; tps[n] = $2; step[n] = $3; gf[n] = $4; peak[n] = $5
				rss[n] = $8; enc[n] = $9; cpu[n] = $10; order[++k] = n
			}
			/^sentence-transformers-bf16 +[0-9]/ { bf = $2 }
			/^bf16 autocast: not measured/ { bfnote = $0 }
			/ tokens\/s: / { ratio[$1] = $5; eratio[$1] = $8; cratio[$1] = $NF }
			END {
				if (k == 0) { printf "| %s | %s | (no rows: see the log) |||||||||||\n", shape, batch; exit }
				for (i = 1; i <= k; i++) {
					n = order[i]; r = (n in ratio) ? ratio[n] : "-"; e = (n in eratio) ? eratio[n] : "-"; c = (n in cratio) ? cratio[n] : "-"
					sub(/;$/, "", r); sub(/;$/, "", e)
					if (n == "sentence-transformers") { r = "1.00x"; e = "1.00x"; c = "1.00x" }
					printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", shape, batch, n, tps[n], step[n], cpu[n], gf[n], peak[n], rss[n], enc[n], r, c, e
				}
				if (bf != "") printf "| %s | %s | sentence-transformers bf16 autocast | %s | | | | | | | | | |\n", shape, batch, bf
			}' "$log"
	done
done
echo; grep -h "^bf16 autocast" "$OUT"/*.txt 2>/dev/null | sort -u || true
