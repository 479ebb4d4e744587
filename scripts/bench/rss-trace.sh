#!/usr/bin/env bash
# rss-trace.sh OUT CMD [ARGS...]: runs CMD (its output to OUT.log) and samples its resident set
# every 0.5 s into OUT.rss ("seconds since start<TAB>VmRSS in KiB"), then prints the peak.
# Used for the memory timelines of docs/results/2026-11-27-eval-memory.md:
#   scripts/bench/rss-trace.sh /tmp/rt bin/toolret train biencoder -data ../shared/datasets/toollens \
#       -init sentence-transformers/all-MiniLM-L6-v2 -run /tmp/rt -batch 64 -max-steps 12 -eval-every 6 \
#       -lr 5e-5 -warmup 0.1 -query-len 32 -tool-len 64 -test "" -backend onnx -quiet
set -euo pipefail
if [[ $# -lt 2 ]]; then
	echo "usage: $0 OUT CMD [ARGS...]" >&2
	exit 2
fi
out=$1
shift
"$@" >"$out.log" 2>&1 &
pid=$!
start=$(date +%s%N)
: >"$out.rss"
while kill -0 "$pid" 2>/dev/null; do
	kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
	[[ -n "$kb" ]] && printf '%.1f\t%s\n' "$(( ($(date +%s%N) - start) / 1000000 ))e-3" "$kb" >>"$out.rss"
	sleep 0.5
done
rc=0
wait "$pid" || rc=$?
awk -F'\t' 'BEGIN {m = 0} $2 > m {m = $2; t = $1} END {printf "peak RSS %.2f GiB at %.1f s\n", m / 2^20, t}' "$out.rss"
exit "$rc"
