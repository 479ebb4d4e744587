#!/usr/bin/env bash
# gateway-live.sh: the figures of docs/results/2026-11-29-gateway-live.md. Over a library of
# BFCL's functions and GitHub's REST operations (about 2,100 tools), with
# sentence-transformers/all-MiniLM-L6-v2 on the go backend:
#   1. cold start: `serve -library` with an empty state directory, seconds to the first 200 of
#      /readyz (the zero-shot index built at start);
#   2. live re-import: with that server running, `toolret import` run again with one function's
#      description changed; seconds from the import's end until GET /v1/tools/{id} gives the
#      new text (the index updated: searches see it), and the tools embedded for it (the log);
#   3. restart with the index cached, seconds to /readyz.
# Usage: experiments/2026-11-29-gateway-live/gateway-live.sh [WORKDIR]; KEEP_STATE=1 keeps WORKDIR's index (step 1
# is then a start with the index cached); TAGS=onnx builds with ONNX Runtime and SERVE_FLAGS
# adds serve flags (for example SERVE_FLAGS='-index-backend auto'). Needs ../shared/datasets/bfcl/functions.json
# and @octokit/openapi under ~/.cache/toolret/mcp-npm (scripts/install-mcp-test.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
bfcl=$root/../shared/datasets/bfcl/functions.json
github=${TOOLRET_CACHE:-$HOME/.cache/toolret}/mcp-npm/node_modules/@octokit/openapi/generated/api.github.com.json
model=sentence-transformers/all-MiniLM-L6-v2
port=${PORT:-18391}
bin=$work/toolret
for f in "$bfcl" "$github"; do
	[ -f "$f" ] || { echo "missing $f" >&2; exit 1; }
done
(cd "$root" && go build ${TAGS:+-tags "$TAGS"} -o "$bin" ./cmd/toolret)
echo "build tags: ${TAGS:-none}; serve flags: ${SERVE_FLAGS:-none}"
echo "cpu: $(lscpu | grep -o 'avx2\|avx512_bf16\|amx_bf16' | sort -u | tr '\n' ' ')"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"

lib=$work/lib.jsonl
rm -f "$lib"
[ "${KEEP_STATE:-0}" = 1 ] || rm -rf "$work/state"
# A copy, so that the re-import below reads the same source path (only the one description
# differs, not every tool's source.origin).
cp "$bfcl" "$work/bfcl.json"
"$bin" import -functions bfcl="$work/bfcl.json" -openapi github="$github" -out "$lib" | grep 'wrote'
echo "tools: $(($(wc -l <"$lib") - 1))"

# ready waits for /readyz of the server with PID $1, printing the seconds since $2.
ready() {
	until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do
		kill -0 "$1" 2>/dev/null || { echo "serve died:" >&2; tail -5 "$work/serve.log" >&2; exit 1; }
		sleep 0.1
	done
	echo "$(date +%s.%N) - $2" | bc
}

t0=$(date +%s.%N)
"$bin" serve -library "$lib" -state "$work/state" -model "$model" ${SERVE_FLAGS:-} -addr "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
echo "start ($([ "${KEEP_STATE:-0}" = 1 ] && echo "index cached" || echo "cold: empty state")): readyz after $(ready $pid "$t0") s"
grep -o '"msg":"zero-shot index"[^}]*' "$work/serve.log" | head -1

# One function's description changed, then imported again over the served file.
id=bfcl.triangle_properties.get
python3 - "$work/bfcl.json" <<'EOF'
import json, sys
fs = json.load(open(sys.argv[1]))
fs[0]["function"]["description"] = "Work out a triangle's area, perimeter and angles from the lengths of its three sides (changed)."
json.dump(fs, open(sys.argv[1], "w"))
EOF
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
t1=$(date +%s.%N)
"$bin" import -functions bfcl="$work/bfcl.json" -out "$lib" | grep 'wrote\|changed:' 
t2=$(date +%s.%N)
until curl -sf "http://127.0.0.1:$port/v1/tools/$id" | grep -q "(changed)"; do sleep 0.05; done
t3=$(date +%s.%N)
echo "re-import: import $(echo "$t2 - $t1" | bc) s; searchable $(echo "$t3 - $t2" | bc) s after the import wrote the file"
sleep 1
grep -o '"msg":"library updated"[^}]*' "$work/serve.log" | tail -1
curl -s "http://127.0.0.1:$port/v1/search" -d '{"query": "angles of a triangle from its three sides", "k": 3}' |
	python3 -c 'import json,sys; r=json.load(sys.stdin); print("search:", r["library_version"], [t["name"] for t in r["tools"]])'
kill $pid
wait $pid 2>/dev/null || true

t0=$(date +%s.%N)
"$bin" serve -library "$lib" -state "$work/state" -model "$model" ${SERVE_FLAGS:-} -addr "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
pid=$!
echo "restart: readyz after $(ready $pid "$t0") s"
kill $pid
wait $pid 2>/dev/null || true
