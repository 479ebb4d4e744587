#!/usr/bin/env bash
# Screens training variants of `make general`'s step 1 on ToolLens's held-out-tool view (seed 1,
# 20 % of its tools) with toolmix, by the dev split of the view's tools the model does not
# train on (the view's dev carved by tools): each variant is the exact step-1 command of
# scripts/pretrained/general.sh plus its flags, stopped after its first dev evaluation (step 75 of
# the 300-step schedule, where most of the lift on new tools comes), and its view-dev and pooled
# dev N@5 printed beside the shipped command's (runs/general-holdout-tooldev/seed1, same seed:
# the training is deterministic for a seed).
# Usage: experiments/2026-11-30-holdout-screens/screen.sh OUT 'NAME:FLAGS' ...
#   (the view: VIEW, default runs/general-holdout-tooldev/toollens-h1, from
#   experiments/2026-11-29-general-holdout/run.sh; STOP, default 75: the step to stop after)
set -euo pipefail
source "$(dirname "$0")/../../scripts/pretrained/build.sh"
out=$1; shift
view=${VIEW:-runs/general-holdout-tooldev/toollens-h1}
stop=${STOP:-75}
[ -f "$view/holdout.json" ] || { echo "screen: $view is not a held-out view (run experiments/2026-11-29-general-holdout/run.sh first)" >&2; exit 1; }
mkdir -p "$out"
echo "cpu: $(lscpu | grep -o 'avx2\|avx512_bf16\|amx_bf16' | sort -u | tr '\n' ' ')"
devline() { # devline METRICS STEP: view-dev and pooled dev N@5 at STEP
  python3 - "$1" "$2" "$(basename "$view")" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("step") == int(sys.argv[2]) and "dev_ndcg@5" in r:
        print(f'view dev N@5 {r["dev_lib/" + sys.argv[3] + "/ndcg@5"]:.2f}  R@5 {r["dev_lib/" + sys.argv[3] + "/recall@5"]:.2f}  pooled dev N@5 {r["dev_ndcg@5"]:.2f}')
        break
PY
}
for spec in "$@"; do
  name=${spec%%:*} flags=${spec#*:}
  run=$out/$name
  read -r -a extra <<<"$flags"
  if [ -z "$(devline "$run/metrics.jsonl" "$stop" 2>/dev/null)" ]; then
    rm -rf "$run"
    t0=$SECONDS
    bin/toolret train biencoder -data "$view:1,toolmix:1" -init sentence-transformers/all-MiniLM-L6-v2 -run "$run" -batch 64 \
      -max-steps 300 -eval-every 75 -lr 5e-5 -query-len 32 -tool-len 64 -test "" -backend "$be" -quiet "${extra[@]}" \
      2>"$out/$name.log" &
    pid=$!
    until [ -n "$(devline "$run/metrics.jsonl" "$stop" 2>/dev/null)" ]; do
      kill -0 $pid 2>/dev/null || { echo "screen: $name stopped before step $stop:" >&2; tail -5 "$out/$name.log" >&2; break; }
      sleep 10
    done
    # Stopped early, or (STOP 300) left to save its weights and exit by itself.
    [ "$stop" -ge 300 ] || kill $pid 2>/dev/null || true
    wait $pid 2>/dev/null || true
    echo "$((SECONDS - t0))" >"$out/$name.seconds"
  fi
  printf '%-22s %-40s %s  (%s s)\n' "$name" "$flags" "$(devline "$run/metrics.jsonl" "$stop")" "$(cat "$out/$name.seconds" 2>/dev/null)"
done
printf '%-22s %-40s %s\n' shipped "(runs/general-holdout-tooldev/seed1)" "$(devline runs/general-holdout-tooldev/seed1/ft/metrics.jsonl "$stop")"
