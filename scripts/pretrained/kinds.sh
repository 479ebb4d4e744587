#!/usr/bin/env bash
# Fine-tunes every model kind from one pre-trained encoder (issue #27 item 5) and evaluates
# each on the test split, in this order (each stage's first stage first):
#   be    bi-encoder, in-batch InfoNCE            (train biencoder -init)
#   mlc   MLC classifier, multi-positive softmax  (train classifier -kind mlc -init)
#   ref   ToolRefiner over the MLC's candidates   (train refiner -candidates mlc -init)
#   colt  COLT graph stage over the bi-encoder    (train colt)
#   ce    cross-encoder reranker (ToolRerank)     (train crossencoder -init), Rerank-m at 10
#   ho    item 7: the `be` recipe on the held-out-tool views (seeds HO_SEEDS, default 1 2 3),
#         alone and fused with BM25 (not in the default stages)
#   hn    bi-encoder again from INIT with one hard negative per example mined by `be` (train mine)
# Every stage writes its eval JSON to $OUT/<stage>.json and a line to $OUT/summary.txt as soon
# as it is done, so a run cut short keeps what it finished.
# Usage: scripts/pretrained/kinds.sh [STAGES]    (default "be mlc ref colt ce hn")
# Environment: TR (toolret binary, default bin/toolret), DATA (default ../shared/datasets/toollens),
#   INIT (default sentence-transformers/all-MiniLM-L6-v2), BACKEND (default go; xla:cuda on a
#   GPU), RUNS (run directories, default runs/kinds), OUT (default $RUNS/out), STEPS (0: the
#   epochs below; N: every training stops after N steps, for a quick check of the chain),
#   EVAL_BACKEND (default $BACKEND), BE_EPOCHS (the bi-encoders' epochs, default 2), HO_SEEDS, HO_EPOCHS,
#   BE_ARGS (more flags for the `be` stage, e.g. "-max-steps 150 -test="), BE_EVAL (0: no test
#   evaluation of `be`, for a run that only feeds later stages), MLC_EPOCHS (default 10), MLC_ARGS
#   (more flags for the `mlc` stage, e.g. "-pooling mean -head-init tools": the imprinted head), REF_EPOCHS (default 3), REF_LR (default 5e-5), REF_MAX_TIME (the
#   refiner's -max-time, e.g. 4m: it stops at that wall-clock time, evaluated there; default none),
#   REF_DEADLINE (Unix seconds by which the refiner's training should end: its -max-time is what
#   is left then, at least 60s; for a lease that ends at a known time).
# Stages after `be` take its run as -first-stage (its dev split) when it is there; without it
# the MLC splits dev itself with the same -seed, but `ref` needs `be` (its Tool2Vec vectors fill
# the refiner's slots): for the refiner alone, `be` with BE_ARGS="-max-steps 150 -test=" BE_EVAL=0.
set -uo pipefail
tr="${TR:-bin/toolret}"
data="${DATA:-../shared/datasets/toollens}"
init="${INIT:-sentence-transformers/all-MiniLM-L6-v2}"
be="${BACKEND:-go}"
ebe="${EVAL_BACKEND:-$be}"
runs="${RUNS:-runs/kinds}"
out="${OUT:-$runs/out}"
steps="${STEPS:-0}"
stages="${1:-be mlc ref colt ce hn}"
mkdir -p "$runs" "$out"
# SUMMARY: another file the summary lines are appended to as well (the GPU script's).
log() { echo "== $(date +%T) $*" | tee -a "$out/summary.txt" ${SUMMARY:+"$SUMMARY"}; }
cap=()
[ "$steps" != 0 ] && cap=(-max-steps "$steps")
peak() { awk '/VmHWM/{printf "%.2f GiB", $2/1048576}' "/proc/$1/status" 2>/dev/null; }

# stage NAME CMD...: runs one training command, logs its wall time, peak RSS and exit status.
stage() {
  local name=$1
  shift
  local t0=$SECONDS
  /usr/bin/time -f "%M" -o "$out/$name.maxrss" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  log "$name train rc=$rc wall $((SECONDS - t0)) s peak RSS $(awk '{printf "%.2f GiB", $1/1048576}' "$out/$name.maxrss" 2>/dev/null)"
  grep -E '^trained|best dev' "$out/$name.log" | tail -1 | tee -a "$out/summary.txt" ${SUMMARY:+"$SUMMARY"}
  return $rc
}
# metrics NAME FILE: logs R@1/3/5, N@5 and C@3/5 of a metrics JSON (the first object holding them).
metrics() {
  python3 - "$2" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("no metrics:", e); sys.exit()
def find(o):
    if isinstance(o, dict):
        if "recall@5" in o: return o
        for v in o.values():
            if (r := find(v)): return r
    if isinstance(o, list):
        for v in o:
            if (r := find(v)): return r
line = lambda m: " ".join(f"{k} {m[k]:.2f}" for k in ("recall@1", "recall@3", "recall@5", "ndcg@5", "comp@3", "comp@5") if k in m)
# A second stage's test metrics hold one section per system (first stage, alone, weighted): each on its own.
parts = {k: find(v) for k, v in d.items()} if isinstance(d, dict) and "recall@5" not in d else {}
if len(parts) > 1 and all(parts.values()):
    print(" | ".join(f"{k}: {line(m)}" for k, m in sorted(parts.items())))
else:
    print(line(find(d) or {}))
PY
}
# evaluate NAME ARGS...: toolret eval ARGS -json into $OUT/NAME.json, its figures logged.
evaluate() {
  local name=$1
  shift
  $tr eval -data "$data" -backend "$ebe" -json "$@" >"$out/$name.json" 2>"$out/$name.err"
  log "$name eval rc=$? $(metrics "$name" "$out/$name.json")"
}
# tested NAME RUN: the test metrics the training command wrote (RUN/test_metrics.json), logged
# and copied to $OUT/NAME.json; evaluated with `eval -run` when the run has none.
tested() {
  if [ -s "$2/test_metrics.json" ]; then
    cp "$2/test_metrics.json" "$out/$1.json"
    log "$1 test $(metrics "$1" "$out/$1.json")"
  else
    evaluate "$1" -run "$2"
  fi
}

if [[ " $stages " == *" be "* ]]; then
  stage be $tr train biencoder -data "$data" -init "$init" -run "$runs/be" -batch 64 -epochs "${BE_EPOCHS:-2}" -lr 5e-5 \
    -query-len 32 -tool-len 128 -pad-multiple 32 -seed 1 -backend "$be" -quiet "${cap[@]}" ${BE_ARGS:-} &&
    { [ "${BE_EVAL:-1}" = 0 ] || tested be "$runs/be"; }
fi
fs=()
[ -f "$runs/be/run.json" ] && fs=(-first-stage "$runs/be")
if [[ " $stages " == *" mlc "* ]]; then
  stage mlc $tr train classifier -kind mlc -loss softmax -data "$data" -init "$init" "${fs[@]}" \
    -run "$runs/mlc" -batch 64 -epochs "${MLC_EPOCHS:-10}" -lr 1e-4 -max-len 48 -seed 1 -backend "$be" -quiet "${cap[@]}" ${MLC_ARGS:-} &&
    tested mlc "$runs/mlc"
fi
if [[ " $stages " == *" ref "* ]]; then
  [ -n "${REF_DEADLINE:-}" ] && REF_MAX_TIME="$(( REF_DEADLINE - $(date +%s) > 60 ? REF_DEADLINE - $(date +%s) : 60 ))s" &&
    log "ref: -max-time $REF_MAX_TIME (REF_DEADLINE)"
  stage ref $tr train refiner -data "$data" -init "$init" "${fs[@]}" -candidates mlc \
    -candidates-run "$runs/mlc" -run "$runs/ref" -n 64 -batch 32 -epochs "${REF_EPOCHS:-3}" -lr "${REF_LR:-5e-5}" \
    ${REF_MAX_TIME:+-max-time "$REF_MAX_TIME"} -seed 1 -backend "$be" \
    -quiet "${cap[@]}" && tested ref "$runs/ref"
fi
if [[ " $stages " == *" colt "* ]]; then
  ce=()
  [ "$steps" != 0 ] && ce=(-epochs 1)
  stage colt $tr train colt -data "$data" -first-stage "$runs/be" -run "$runs/colt" -seed 1 -quiet "${ce[@]}" &&
    tested colt "$runs/colt"
fi
if [[ " $stages " == *" ce "* ]]; then
  ms=(-max-steps 600)
  [ "$steps" != 0 ] && ms=("${cap[@]}")
  stage ce $tr train crossencoder -data "$data" -init "$init" -first-stage "$runs/be" -run "$runs/ce" \
    -batch 16 -epochs 1 -lr 3e-5 -depth 30 -negatives-per-positive 7 -seed 1 -backend "$be" -quiet "${ms[@]}" &&
    evaluate ce -method rerank-m -first-stage "$runs/be" -reranker "$runs/ce" -depth 10 -weight dev
fi
if [[ " $stages " == *" hn "* ]]; then
  $tr train mine -data "$data" -run "$runs/be" -backend "$ebe" >"$out/mine.log" 2>&1 || log "mine failed: $(tail -2 "$out/mine.log")"
  stage hn $tr train biencoder -data "$data" -init "$init" -run "$runs/hn" -negatives "$runs/be/negatives-train.jsonl" -hard-negatives 1 \
    -batch 64 -epochs "${BE_EPOCHS:-2}" -lr 5e-5 -query-len 32 -tool-len 128 -pad-multiple 32 -seed 1 -backend "$be" -quiet \
    "${cap[@]}" && tested hn "$runs/hn"
fi
if [[ " $stages " == *" ho "* ]]; then
  # Item 7: held-out tools (-holdout-tools 0.2, seeds 1-3), the bi-encoder recipe of `be` for
  # HO_EPOCHS (default 1) on each view, alone and fused with BM25 (zscore, weight on dev).
  for s in ${HO_SEEDS:-1 2 3}; do
    v=(-holdout-tools 0.2 -holdout-seed "$s")
    stage "ho$s" $tr train biencoder -data "$data" "${v[@]}" -init "$init" -run "$runs/ho$s" -batch 64 \
      -epochs "${HO_EPOCHS:-1}" -lr 5e-5 -query-len 32 -tool-len 128 -pad-multiple 32 -seed 1 -backend "$be" -quiet \
      "${cap[@]}" && tested "ho$s" "$runs/ho$s" &&
      evaluate "ho$s-bm25" -method fusion -runs "run:$runs/ho$s,bm25" "${v[@]}"
  done
fi
log "done"
