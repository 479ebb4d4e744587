#!/usr/bin/env bash
# run-docs.sh runs, in order, every command line of README.md and docs/*.md too heavy for a
# test (training, long evaluations, servers, benchmarks); cmd/toolret's TestDocsCheapCommands
# runs the cheap ones and -h of every synopsis, and TestDocsCommandsCovered fails when a docs
# command is in neither list (DRY=1 prints this list; that test reads it).
#
#   scripts/dev/run-docs.sh            # everything, each line under flock /work/heavy.lock
#   ONLY=serve scripts/dev/run-docs.sh # the lines containing "serve"
#
# Placeholders of the docs are given values: DIR and $TL the ToolLens dataset (TL=...),
# BE_RUN / RUN the recipe run runs/tl-minilm the README's tour trains first, OUT/DIR outputs
# under runs/docs/; a server (serve) runs for SERVE_SECONDS (20) and counts as passed when it
# is still up then. Lines whose inputs are not on this machine (a file named in the docs as
# an example: mcp.json, petstore.yaml, HF_DIR...) fail and are counted; the summary lists them.
set -uo pipefail
cd "$(git rev-parse --show-toplevel)"
LIST=$(cat <<'LINES'
eval -model sentence-transformers/all-MiniLM-L6-v2 -data ../shared/datasets/toollens -json
train biencoder -data ../shared/datasets/toollens -init sentence-transformers/all-MiniLM-L6-v2 -run runs/tl-minilm -batch 64 -max-steps 150 -lr 5e-5 -query-len 32 -tool-len 64
eval -data ../shared/datasets/toollens -run runs/tl-minilm -subsets
eval -data ../shared/datasets/toollens -method fusion -runs run:runs/tl-minilm,bm25 -fusion zscore -weight dev
eval -data D -method fusion -runs model:DIR,bm25 -fusion zscore -weight adaptive -split dev -first-stage RUN
eval -data D -method fusion -runs DENSE.json,BM25.json -fusion zscore -weight adaptive:0.95,-0.05
export -run runs/tl-minilm -data ../shared/datasets/toollens -format index -out exports/tl-index
serve -index exports/tl-index -mcp http -addr 127.0.0.1:8080
import -mcp mcp.json -out tools.jsonl
serve -library tools.jsonl -model sentence-transformers/all-MiniLM-L6-v2 -upstreams mcp.json -mcp http -addr 127.0.0.1:8080
serve -library tools.jsonl -model runs/general/model -upstreams mcp.json -mcp http -addr 127.0.0.1:8080
encode -backend xla:cpu -model HF_DIR -in texts.txt -out out.jsonl
bench train -backends go,onnx,xla:cpu -steps 5 -python ""
train biencoder -backend xla:cpu -precision bf16 -init sentence-transformers/all-MiniLM-L6-v2 -run runs/bf16
encode -backend xla:cpu -precision auto -model sentence-transformers/all-MiniLM-L6-v2 -in texts.txt
export -backend xla:cpu -precision bf16 -model sentence-transformers/all-MiniLM-L6-v2 -format index -out runs/bf16-index
serve -backend xla:cpu -index runs/bf16-index
eval -data DIR -compare bm25,run:runs/be
eval -suite zeroshot -model sentence-transformers/all-MiniLM-L6-v2
eval -data toollens:1,toolmix:1 -split dev -model runs/general/model-tool128 -reranker runs/general/ce -depth 20 -weight dev -first-stage runs/general/ft
export -model runs/general/model-tool128 -format hf -out runs/general/model-rerank -recipe-reranker runs/general/ce -recipe-rerank-depth 20 -recipe-rerank-weight 0.4
eval -suite zeroshot -model sentence-transformers/all-MiniLM-L6-v2 -backend onnx -clauses
import -mcp mcp.json -out tools.jsonl
import -openapi petstore=petstore.yaml -out tools.jsonl
serve -library tools.jsonl -model sentence-transformers/all-MiniLM-L6-v2 -upstreams mcp.json -mcp http -addr 127.0.0.1:8080
bench ann -sizes 100000,1000000
train biencoder -data ../shared/datasets/toollens -holdout-tools 0.2 -holdout-seed 1 -run runs/be-h1
eval -data ../shared/datasets/toollens -run runs/be-h1
eval -data DIR -method fusion -runs bm25,run:runs/be-h1
eval -data DIR -index idx -hybrid minmax -hybrid-weight 0.3
serve -index idx -hybrid rrf
train pretrain -data ../shared/datasets/toollens -holdout-tools 0.2 -holdout-seed 1 -run runs/pre-h1 -backend onnx -layers 2 -hidden 192 -heads 4 -vocab-size 8000 -batch 64 -epochs 5 -lr 5e-4
train biencoder -data ../shared/datasets/toollens -holdout-tools 0.2 -holdout-seed 1 -run runs/be-h1-pre -init runs/pre-h1 -backend onnx -epochs 5 -batch 64 -lr 5e-4 -symmetric
export -model sentence-transformers/all-MiniLM-L6-v2 -data DIR -format index -out OUT
serve -index OUT
train biencoder -data DIR -init sentence-transformers/all-MiniLM-L6-v2 -run RUN
eval -data DIR -model sentence-transformers/all-MiniLM-L6-v2 -json
encode -model sentence-transformers/all-MiniLM-L6-v2 -pooling mean -in texts.txt
train biencoder -data ../shared/datasets/toollens -init sentence-transformers/all-MiniLM-L6-v2 -run runs/tl-minilm -batch 64 -max-steps 150 -lr 5e-5 -query-len 32 -tool-len 64 -backend onnx
eval -method rerank -first-stage BE_RUN -reranker CE_RUN -classifier QT_RUN -ablations
eval -run MLC_RUN
bench rerank -first-stage BE_RUN -reranker CE_RUN -classifier QT_RUN -backends go,onnx
import -mcp ~/.config/Claude/claude_desktop_config.json -out tools.jsonl
import -openapi github=api.github.com.json -out tools.jsonl
import -functions bfcl/functions.json -out tools.jsonl
export -model sentence-transformers/all-MiniLM-L6-v2 -format index -data tools.jsonl -out index
serve -index index
eval -run REFINER_RUN
export -run BE_RUN -format index -refiner REFINER_RUN -out DIR
train biencoder -data DIR -arch wordbag -hidden 768 -query-len 64 -tool-len 256 -epochs 3 -lr 1e-4 -batch 64 -symmetric -backend onnx -run runs/wb
train mine -data ../shared/datasets/toollens -run runs/tl
export -run runs/from-use -data tools.jsonl -format index -out tools.toolret/index-from-use
serve -index idx -addr 0.0.0.0:8080
serve -index idx -addr 0.0.0.0:8081
serve -library tools.jsonl -model sentence-transformers/all-MiniLM-L6-v2 -addr 0.0.0.0:8082 -database "$TOOLRET_DATABASE_URL"
train biencoder -data tools.jsonl -synthetic 8 -init sentence-transformers/all-MiniLM-L6-v2 -run runs/cold -epochs 1 -batch 32 -lr 5e-5
train biencoder -data tools.jsonl -usage tools.toolret/usage.jsonl -init sentence-transformers/all-MiniLM-L6-v2 -run runs/from-use -epochs 1 -batch 32 -lr 5e-5
bench load -url http://127.0.0.1:8080 -first 4,10,16,22,32,45,70,95,140,190 -requests 0
bench load -url http://127.0.0.1:8080 -requests 20000 -concurrency 32 -soak 10m -sample 10s
train biencoder -backend xla:cpu,devices=2 -devices 2 -batch 32
train biencoder -init sentence-transformers/all-MiniLM-L6-v2 -backend xla:cuda -devices 4 -batch 128
encode -model M -in FILE -backend onnx -quantize int8
export -model M -format index -data DIR -backend onnx -quantize int8 -out IDX
export -model sentence-transformers/all-MiniLM-L6-v2 -format hf -quantize int8 -out DIR
export -model sentence-transformers/all-MiniLM-L6-v2 -keep-layers 0,2,4 -out DIR
serve -index IDX -backend onnx
serve -library LIB.jsonl -model M -backend onnx -quantize int8
export -model M -format index -data DIR -backend xla:cpu -precision bf16 -out IDX
serve -index IDX -backend xla:cpu
export -run runs/lora-r16 -out DIR
export -run runs/lora-r16 -lora-export adapter -out DIR
LINES
)
if [ -n "${DRY:-}" ]; then
	printf '%s\n' "$LIST"
	exit 0
fi
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.4} GOEXPERIMENT=${GOEXPERIMENT:-simd}
export TL=${TL:-../shared/datasets/toollens}
LOCK=${LOCK:-/work/heavy.lock}
mkdir -p runs/docs
make -s build || exit 1
pass=0
failed=()
while IFS= read -r line; do
	[ -n "$line" ] || continue
	[ -z "${ONLY:-}" ] || [[ "$line" == *"$ONLY"* ]] || continue
	cmd=$(printf '%s' "$line" | sed -E \
		-e 's#(^| )-data DIR#\1-data $TL#g' -e 's#\b(BE_RUN|RUN)\b#runs/tl-minilm#g' \
		-e 's#\b(OUT|DIR)\b#runs/docs/out#g')
	echo "+ toolret $cmd"
	t=""
	case "$line" in serve*) t="timeout ${SERVE_SECONDS:-20}" ;; esac
	flock "$LOCK" bash -c "$t bin/toolret $cmd"
	rc=$?
	if [ $rc -eq 0 ] || { [ -n "$t" ] && [ $rc -eq 124 ]; }; then
		pass=$((pass + 1))
	else
		failed+=("$line (exit $rc)")
	fi
done <<<"$LIST"
echo "run-docs.sh: $pass passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ] || printf "  failed: %s\n" "${failed[@]}"
[ ${#failed[@]} -eq 0 ]
