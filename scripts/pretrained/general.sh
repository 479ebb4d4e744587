#!/usr/bin/env bash
# The general tool retriever (`make general`; docs/pre-trained-models.md, "A general tool
# retriever"): the model to start from when a library has no queries of its own.
#  1. MODEL fine-tuned on several tool libraries in one run (DATA, default toollens:1,toolmix:1:
#     ToolLens and toolmix's eight sources, every batch from one library), STEPS steps of 64;
#  2. the fine-tuned weights averaged with MODEL's (WiSE-FT) at each weight of WISE_WEIGHTS,
#     each fused with BM25 (zscore) at the fusion weight best on the run's pooled dev split
#     (each library's dev queries ranked in their own library);
#  3. the WiSE-FT weight whose fused dev N@5 is best, with its fusion weight, or with an
#     adaptive dense weight (per query, from the dense ranking's top z-score) learned on the
#     dev split's libraries when one beats every fixed weight there (ADAPTIVE=0: never);
#  4. exported as a model directory that carries that recipe (OUT/model: the hybrid weight,
#     per-clause retrieval (merged by CLAUSES) when it wins on the pooled dev split, and the tool length of
#     TOOL_LENS best on that split with the whole recipe), which `eval -model`, `export -model`
#     and `serve -library LIB -model` apply;
#  5. with RERANK_STEPS > 0 (default 0: none), a cross-encoder reranker trained on the same
#     libraries over the fine-tuned bi-encoder's candidates (RERANK_STEPS steps of 8 queries;
#     240 on 2 CPU cores), its depth (RERANK_DEPTHS) and interpolation weight picked on the
#     pooled dev split, added to the recipe when it beats the recipe alone there (off by
#     default: on four libraries left out of training the reranker this rule picks loses to
#     the recipe alone, experiments/2026-11-30-zeroshot-dev/README.md, "The reranker");
#  6. reported on the seven zero-shot sets (eval -suite zeroshot: never trained or selected on)
#     beside BM25, MODEL, the dense model alone, its BM25 fusion, the recipe without its
#     reranker and, when another length won, the recipe at 256-token tools, into OUT/suite.md
#     and OUT/suite.json.
# Usage: scripts/pretrained/general.sh   (env: MODEL, QUERY_PROMPT (MODEL's query instruction,
# e.g. bge's, kept by every step), MINI_BATCH (training memory), DATA, STEPS, WISE_WEIGHTS, ADAPTIVE, CLAUSES, TOOL_LENS, RERANK_STEPS,
# RERANK_DEPTHS, OUT, SUITE=0 to stop after step 5, TRAIN_BACKEND and TRAIN_ARGS for step 1, JOBS for step 2,
# BACKEND and PREBUILT=1 (scripts/pretrained/build.sh); needs `make models`,
# ../shared, and ONNX Runtime for speed: `make install-onnx`). A step whose output exists is
# not redone (delete OUT to start again).
set -euo pipefail
source "$(dirname "$0")/build.sh"
model="${MODEL:-sentence-transformers/all-MiniLM-L6-v2}"
data="${DATA:-toollens:1,toolmix:1}"
# 300: picked over 150 on the pooled dev split; dev prefers 600, which lose on the zero-shot
# suite and were not adopted (docs/results/2026-11-29-general-steps.md says why)
steps="${STEPS:-300}"
weights="${WISE_WEIGHTS:-0 0.1 0.2 0.3 0.5}"
case ${RERANK_STEPS:-0} in ''|*[!0-9]*) echo "general: RERANK_STEPS=$RERANK_STEPS: want a number of steps (0: no reranker)" >&2; exit 1 ;; esac
toollens="${TOOL_LENS:-128 256}"
out="${OUT:-runs/general}"
export TOOLRET_DATASETS="${TOOLRET_DATASETS:-$PWD/../shared/datasets}"
tl=256 # the query and tool length of steps 2-4; step 4 then tries TOOL_LENS
lens=(-query-len "$tl" -tool-len "$tl")
prompt=()
[ -z "${QUERY_PROMPT:-}" ] || prompt=(-query-prompt "$QUERY_PROMPT")
# MINI_BATCH: encode each training batch this many rows at a time (GradCache: the same step in
# less memory; mpnet's batch of 64 needs it on a 24 GiB machine: MINI_BATCH=32 peaks at 15 GiB)
mb=()
[ -z "${MINI_BATCH:-}" ] || mb=(-mini-batch "$MINI_BATCH")
mkdir -p "$out"
ft="$out/ft"
start=$(date +%s)
lap() { echo "general: $1 ($(( $(date +%s) - start )) s so far)"; }

if [ ! -f "$ft/summary.json" ]; then
  rm -rf "$ft"
  # TRAIN_BACKEND (default: the evaluations' backend) and TRAIN_ARGS (more training flags), e.g.
  # TRAIN_BACKEND=xla:cuda TRAIN_ARGS="-pad-multiple 32" on a GPU (scripts/gpu/device.sh general)
  read -r -a targs <<<"${TRAIN_ARGS:-}"
  /usr/bin/time -v bin/toolret train biencoder -data "$data" -init "$model" -run "$ft" -batch 64 \
    -max-steps "$steps" -eval-every 75 -lr 5e-5 -query-len 32 -tool-len 64 -test "" -backend "${TRAIN_BACKEND:-$be}" -quiet \
    "${prompt[@]}" "${mb[@]}" "${targs[@]}" 2> "$out/train.log" || { tail -20 "$out/train.log" >&2; exit 1; }
fi
# A run reused from an earlier invocation must have trained the steps asked for (the default
# changed from 150 to 300): otherwise say so rather than report it as this budget's.
had=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("steps", ""))' "$ft/summary.json")
if [ "$had" != "$steps" ]; then
  echo "general: $ft trained $had steps, not STEPS=$steps: delete $out (or give STEPS=$had) to go on" >&2
  exit 1
fi
grep -E "Maximum resident|Elapsed \(wall" "$out/train.log" || true
lap "trained $ft"

# 2-3. WiSE-FT, (1-W)·fine-tuned + W·MODEL, fused with BM25 (zscore): for each W the fusion
# weight is tuned on the run's dev split (eval -weight dev), and W is the one whose fused dev
# N@5 is best (one embedding pass per W: the dense-only weight 1 is among those tried).
# JOBS > 1 (a machine with many cores): the weights' exports and dev evaluations run JOBS at a
# time, each on the onnx backend with nproc/JOBS threads (one ONNX Runtime on all cores
# encodes small batches with idle threads). The same computation, but ONNX Runtime's thread
# count changes the order of float sums, so a dev figure can differ in its last digits from a
# JOBS=1 run (not measured side by side).
wise() { # wise W BACKEND: WiSE-FT weight W exported and fused with BM25 on the dev split
  local d="$out/wise-$1"
  if [ ! -f "$d/config.json" ]; then
    rm -rf "$d"
    bin/toolret export -model "$ft" -interpolate "$model" -interpolate-weight "$1" "${lens[@]}" -format hf -out "$d" >/dev/null
  fi
  if [ ! -s "$d-dev.txt" ]; then
    bin/toolret eval -data "$data" -method fusion -runs "model:$d,bm25" -fusion zscore -weight dev \
      -first-stage "$ft" -split dev -backend "$2" > "$d-dev.txt.tmp"
    mv "$d-dev.txt.tmp" "$d-dev.txt"
  fi
}
jobs_="${JOBS:-1}"
case $jobs_ in ''|0|*[!0-9]*) echo "general: JOBS=$jobs_: want a number >= 1" >&2; exit 1 ;; esac
if [ "$jobs_" -gt 1 ]; then
  [ "$be" = onnx ] || { echo "general: JOBS=$jobs_ needs the onnx backend (this run's: $be)" >&2; exit 1; }
  pbe="onnx:cpu,intra_op_num_threads=$(( $(nproc) / jobs_ > 0 ? $(nproc) / jobs_ : 1 ))"
  pids=() i=0
  for w in $weights; do
    wise "$w" "$pbe" &
    pids+=($!) i=$((i + 1))
    if [ $((i % jobs_)) = 0 ]; then for p in "${pids[@]}"; do wait "$p" || { echo "general: a WiSE-FT export or dev evaluation failed (JOBS=$jobs_; its error is above)" >&2; exit 1; }; done; pids=(); fi
  done
  for p in "${pids[@]}"; do wait "$p" || { echo "general: a WiSE-FT export or dev evaluation failed (JOBS=$jobs_; its error is above)" >&2; exit 1; }; done
fi
best="" bestn=-1 hw=""
for w in $weights; do
  d="$out/wise-$w"
  wise "$w" "$be"
  read -r n fw < <(python3 - "$d-dev.txt" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
w = re.search(r"weights ([0-9.]+),([0-9.]+)", t).group(1)
head = next(l for l in t.splitlines() if l.strip().startswith("queries")).split()
row = next(l for l in t.splitlines() if l.startswith("all")).split()[1:]
print(row[head.index("N@5")], w)
EOF
)
  echo "general: WiSE-FT weight $w: dense weight $fw with BM25, pooled dev N@5 $n"
  if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$n" "$bestn"; then
    best="$w" bestn="$n" hw="$fw"
  fi
done
[ -n "$best" ] || { echo "general: WISE_WEIGHTS names no weight" >&2; exit 1; }
lap "WiSE-FT weight $best, BM25 fusion dense weight $hw (pooled dev N@5 $bestn)"

# 3b. An adaptive dense weight (eval -method fusion -weight adaptive): per query
# clamp(base + slope·z1), z1 the top z-score of the query's dense ranking, learned on the
# pooled dev split averaging over its libraries (each library once, as the suite averages its
# sets); it replaces the fixed weight in the recipe when its slope is not 0, that is when it
# beats every fixed weight of its grid there (ADAPTIVE=0: the fixed weight).
hyb=(-hybrid zscore -hybrid-weight "$hw") choice="WiSE-FT $best, BM25 zscore $hw"
if [ "${ADAPTIVE:-1}" != 0 ]; then
  f="$out/wise-$best-adaptive-dev.txt"
  if [ ! -s "$f" ]; then
    bin/toolret eval -data "$data" -method fusion -runs "model:$out/wise-$best,bm25" -fusion zscore -weight adaptive \
      -first-stage "$ft" -split dev -backend "$be" > "$f.tmp" 2>&1
    mv "$f.tmp" "$f"
  fi
  grep "^fusion: zscore: adaptive" "$f" | sed 's/^/general: /' || true
  rule=$(sed -n 's/.*(-weight adaptive:\([^)]*\)).*/\1/p' "$f" | head -1)
  [ -n "$rule" ] || { echo "general: $f names no rule \"-weight adaptive:BASE,SLOPE\"" >&2; exit 1; }
  if [ "${rule#*,}" != 0 ]; then
    hyb=(-hybrid zscore -hybrid-weight "adaptive:$rule") choice="WiSE-FT $best, BM25 zscore adaptive $rule"
    lap "an adaptive dense weight $rule joins the recipe in place of $hw"
  else
    lap "no adaptive rule beats the fixed weights on the libraries' dev: dense weight $hw stays"
  fi
fi

# 4. The model directory with its recipe (the fusion), then per-clause retrieval (eval
# -clauses) added to the recipe when it wins on the pooled dev split (N@5) over the fusion
# alone; OUT/model-hybrid keeps the recipe without clauses, for the suite's rows.
# (A step's output is reused only while the choices it was made from hold: a later run with
# other WISE_WEIGHTS or TOOL_LENS that picks otherwise redoes it and what follows.)
if [ ! -f "$out/model-hybrid/config.json" ] || [ "$(cat "$out/model-hybrid.choice" 2>/dev/null)" != "$choice" ]; then
  rm -rf "$out/model-hybrid" "$out/model-hybrid.tmp" "$out"/model-hybrid-dev*.txt "$out"/model-tool*
  bin/toolret export -model "$ft" -interpolate "$model" -interpolate-weight "$best" "${lens[@]}" -format hf \
    "${hyb[@]}" -selected-on "$choice on the pooled dev split of $data ($ft)" \
    -out "$out/model-hybrid.tmp" >/dev/null
  rm -rf "$out/model-hybrid" && mv "$out/model-hybrid.tmp" "$out/model-hybrid"
  echo "$choice" > "$out/model-hybrid.choice"
fi
devn5() { python3 - "$1" <<'EOF'
import sys
t = open(sys.argv[1]).read()
head = next(l for l in t.splitlines() if l.strip().startswith("queries")).split()
print(next(l for l in t.splitlines() if l.startswith("all")).split()[1:][head.index("N@5")])
EOF
}
# The merge rule of the clauses (CLAUSES, MERGE[,whole=W]): mix with the whole query at 0.5,
# chosen on the zero-shot dev split (experiments/2026-11-30-zeroshot-dev/recipe.sh: four
# libraries left out of a training run; mix 0.5 N@5 80.35, mix 0.7 80.02, rrf 79.50, max
# 79.01, none 78.96), where the training libraries' dev had kept max within noise.
merge="${CLAUSES:-mix,whole=0.5}"
clauses=(-clauses -clauses-merge "${merge%%,*}")
[[ $merge != *whole=* ]] || clauses+=(-clauses-whole "${merge##*whole=}")
for c in "" -clauses; do
  f="$out/model-hybrid-dev$c.txt"
  if [ ! -s "$f" ] || { [ -n "$c" ] && [ "$(cat "$f.merge" 2>/dev/null)" != "$merge" ]; }; then
    a=()
    [ -z "$c" ] || { a=("${clauses[@]}"); rm -rf "$out"/model-tool*; } # another merge: its exports redone
    bin/toolret eval -data "$data" -model "$out/model-hybrid" -first-stage "$ft" -split dev -backend "$be" "${a[@]}" > "$f.tmp"
    mv "$f.tmp" "$f"
    [ -z "$c" ] || echo "$merge" > "$f.merge"
  fi
done
n0=$(devn5 "$out/model-hybrid-dev.txt") n1=$(devn5 "$out/model-hybrid-dev-clauses.txt")
m0="$out/model-tool$tl"
if [ ! -f "$m0/config.json" ]; then
  rm -rf "$m0.tmp"
  if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$n1" "$n0"; then
    echo "general: per-clause retrieval wins on the pooled dev split (N@5 $n1 > $n0): in the recipe"
    bin/toolret export -model "$out/model-hybrid" -format hf "${clauses[@]}" -out "$m0.tmp" >/dev/null
    cp "$out/model-hybrid-dev-clauses.txt" "$m0-dev.txt"
  else
    echo "general: per-clause retrieval does not win on the pooled dev split (N@5 $n1 <= $n0): not in the recipe"
    cp -r "$out/model-hybrid" "$m0.tmp"
    cp "$out/model-hybrid-dev.txt" "$m0-dev.txt"
  fi
  mv "$m0.tmp" "$m0"
fi

# The tool length the model is exported at (it trained on 64-token tools): each of TOOL_LENS
# with the whole recipe on the pooled dev split, the best N@5 kept (the first on a tie).
bestl="" bestln=-1
for n in $toollens; do
  m="$out/model-tool$n"
  if [ ! -f "$m/config.json" ]; then
    rm -rf "$m.tmp"
    bin/toolret export -model "$m0" -tool-len "$n" -format hf -out "$m.tmp" >/dev/null
    mv "$m.tmp" "$m"
  fi
  if [ ! -s "$m-dev.txt" ]; then
    bin/toolret eval -data "$data" -model "$m" -first-stage "$ft" -split dev -backend "$be" > "$m-dev.txt.tmp"
    mv "$m-dev.txt.tmp" "$m-dev.txt"
  fi
  ln=$(devn5 "$m-dev.txt")
  echo "general: tool length $n: pooled dev N@5 $ln"
  if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$ln" "$bestln"; then
    bestl="$n" bestln="$ln"
  fi
done
[ -n "$bestl" ] || { echo "general: TOOL_LENS names no length" >&2; exit 1; }
base="$out/model-tool$bestl"
lap "the recipe without a reranker is $base (tool length $bestl, pooled dev N@5 $bestln)"

# 5. A cross-encoder reranker trained on the same libraries (train crossencoder -data DATA:
# each query's hard negatives from the fine-tuned bi-encoder's top 30 in its own library, the
# bi-encoder run's dev split), RERANK_STEPS steps of 8 queries (0: no reranker). For each depth
# of RERANK_DEPTHS it reranks the recipe's top tools on the pooled dev split with the weight
# picked there (eval -weight dev: kept above 0 only at a paired t >= 2 over the recipe alone);
# the depth whose reranked dev N@5 is best joins the recipe when it beats the recipe alone.
# Off by default (RERANK_STEPS=0): the rule below picks its reranker on libraries both stages
# trained on, and on four libraries left out of training (the zero-shot dev split, never the
# suite) the reranker it picked at 300 steps (depth 20, weight 0.4) lost 4.81 N@5 to the recipe
# alone, and 1.62 at depth 10 (experiments/2026-11-30-zeroshot-dev/reranker.sh). RERANK_STEPS=240 trains one (57 min on 2 cores).
rsteps="${RERANK_STEPS:-0}"
final="$base"
if [ "$rsteps" -gt 0 ]; then
  ce="$out/ce"
  if [ ! -f "$ce/summary.json" ]; then
    rm -rf "$ce"
    /usr/bin/time -v bin/toolret train crossencoder -data "$data" -first-stage "$ft" -run "$ce" -batch 8 \
      -max-steps "$rsteps" -eval-every 80 -lr 3e-5 -depth 30 -negatives-per-positive 7 -dev-max 300 \
      -test "" -seed 1 -backend "$be" -quiet 2> "$out/ce.log" || { tail -20 "$out/ce.log" >&2; exit 1; }
  fi
  grep -E "Maximum resident|Elapsed \(wall" "$out/ce.log" || true
  lap "trained the cross-encoder $ce"
  bestd="" bestw="" bestdn="$bestln"
  for dp in ${RERANK_DEPTHS:-10 20}; do
    f="$out/rerank$dp-$(basename "$base")-dev.txt"
    if [ ! -s "$f" ]; then
      bin/toolret eval -data "$data" -model "$base" -reranker "$ce" -depth "$dp" -weight dev -first-stage "$ft" \
        -split dev -backend "$be" > "$f.tmp"
      mv "$f.tmp" "$f"
    fi
    w=$(sed -n 's/^rerank weight \([0-9.]*\) .*/\1/p' "$f" | head -1)
    [ -n "$w" ] || { echo "general: $f has no \"rerank weight W\" line (eval -weight dev)" >&2; exit 1; }
    dn=$(devn5 "$f")
    echo "general: reranker at depth $dp: dev weight $w, pooled dev N@5 $dn (recipe alone $bestln)"
    if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 0 and float(sys.argv[2]) > float(sys.argv[3]) else 1)' "$w" "$dn" "$bestdn"; then
      bestd="$dp" bestw="$w" bestdn="$dn"
    fi
  done
  if [ -n "$bestd" ]; then
    final="$out/model-rerank$bestd-$(basename "$base")"
    sel="$choice, $( [ -n "$(sed -n 's/.*"clauses".*/y/p' "$base/toolret_recipe.json")" ] && echo "clauses, " )tools at $bestl tokens and the reranker ($ce) at depth $bestd, weight $bestw on the pooled dev split of $data ($ft)"
    if [ ! -f "$final/config.json" ] || [ "$(cat "$final.choice" 2>/dev/null)" != "$sel" ]; then
      rm -rf "$final" "$final.tmp"
      bin/toolret export -model "$base" -format hf -recipe-reranker "$ce" -recipe-rerank-depth "$bestd" \
        -recipe-rerank-weight "$bestw" -selected-on "$sel" -out "$final.tmp" >/dev/null
      mv "$final.tmp" "$final"
      echo "$sel" > "$final.choice"
    fi
    echo "general: the reranker at depth $bestd, weight $bestw joins the recipe (pooled dev N@5 $bestdn > $bestln)"
  else
    echo "general: the reranker does not beat the recipe alone on the pooled dev split: not in the recipe"
  fi
fi
rm -rf "$out/model.tmp" && cp -r "$final" "$out/model.tmp"
rm -rf "$out/model" && mv "$out/model.tmp" "$out/model"
lap "wrote $out/model (from $final)"

if [ "${SUITE:-1}" = 0 ]; then
  lap "done (SUITE=0: no zero-shot suite): $out/model"
  exit 0
fi

# 6. The zero-shot suite: BM25, MODEL, the dense model alone (WiSE-FT at dev's weight), its
# BM25 fusion (model-hybrid), the recipe at 256-token tools when dev chose another length, the
# recipe without its reranker when one joined it, and the general model with its whole recipe.
start_model="$model"
if [ -n "${QUERY_PROMPT:-}" ]; then # a suite system takes no prompt flag: MODEL with its prompt as a directory
  start_model="$out/start"
  if [ ! -f "$start_model/config.json" ]; then
    rm -rf "$start_model.tmp"
    bin/toolret export -model "$model" -format hf "${prompt[@]}" -out "$start_model.tmp" >/dev/null
    mv "$start_model.tmp" "$start_model"
  fi
fi
suite_models="$start_model,$out/wise-$best"
cmp -s "$out/model/toolret_recipe.json" "$out/model-hybrid/toolret_recipe.json" || suite_models+=",$out/model-hybrid"
[ "$bestl" = "$tl" ] || suite_models+=",$m0" # the recipe at the length of steps 2-4
[ "$final" = "$base" ] || suite_models+=",$base" # the recipe without its reranker
bin/toolret eval -suite zeroshot -model "$out/model" -suite-models "$suite_models" -backend "$be" -json > "$out/suite.json"
python3 - "$out/suite.json" > "$out/suite.md" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for key, label in (("recall@5", "R@5"), ("recall@1", "R@1"), ("recall@10", "R@10"), ("ndcg@5", "N@5")):
    print(f"\n| {label} | " + " | ".join(r["sets"]) + " | mean |")
    print("|" + "|".join(["---"] + ["---:"] * (len(r["sets"]) + 1)) + "|")
    for s in r["systems"]:
        print(f'| {s["name"]} | ' + " | ".join(f'{row["metrics"][key]:.2f}' for row in s["rows"]) + f' | {s["mean"][key]:.2f} |')
EOF
cat "$out/suite.md"
lap "done: the general retriever is $out/model (serve it: bin/toolret serve -library LIB.jsonl -model $out/model)"
