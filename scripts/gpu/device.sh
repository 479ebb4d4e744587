#!/usr/bin/env bash
# Runs on a GPU machine with no network (the device tool's machines: CUDA, PyTorch,
# sentence-transformers and jax-cuda13-pjrt in the image), from the repository root with gpu/
# made by scripts/gpu/pack.sh beside it. Writes everything to $OUT (default /tmp/gpu-out):
#  1. toolret's XLA backend on the CUDA PJRT plugin that the image's jax-cuda13-pjrt carries
#     (laid out as `make install-xla-cuda` lays it out: plugin in nvidia/, the NVIDIA libraries
#     beside it), checked on a few training steps;
#  2. one full ToolLens fine-tune of all-MiniLM-L6-v2 (1 epoch, batch 64, lr 5e-5, query 32 /
#     tool 128 tokens) by toolret on xla:cuda and by sentence-transformers on the same GPU from
#     the same weights, both evaluated on ToolLens test by `toolret eval` (and by ST itself);
#  3. the training-step bench: MiniLM, bge-small and bert-base shapes, batch 32 and 64,
#     toolret xla:cuda against sentence-transformers fp32 / tf32 / bf16 autocast.
#  4. (stage "kinds", not in the default) every model kind fine-tuned from all-MiniLM-L6-v2 on
#     ToolLens by scripts/pretrained/kinds.sh on xla:cuda; its eval JSONs and logs come back as
#     kinds.tar.gz, its summary lines in summary.txt as each stage ends.
#  5. (stage "seeds") more seeds (MLC_SEEDS, default "2 3") of the imprinted MLC side by side,
#     on gpu/first-stage's dev split; their logs, metrics and dev/test rankings in seedN.tar.xz.
#  6. (stage "mlc") imprinted MLC runs of other models and poolings side by side (MLC_RUNS, e.g.
#     "bge:cls:1 bge:mean:1"), likewise; in MODEL-POOLING-sSEED.tar.xz.
#  (stage "weights", alone) copies gpu-w/*.f16.xz to /tmp/keep for the next call on the same
#     warm machine: bge-small's weights (54 MiB packed) do not fit in one call beside the rest.
#  7. (stage "general", alone) `make general` end to end: scripts/pretrained/general.sh with its
#     training on xla:cuda and its evaluations on ONNX Runtime over the machine's CPU cores
#     (packed by `GENERAL=1 scripts/gpu/pack.sh`: MiniLM's weights in gpu-w/, which a first call
#     leaves on the machine with stage weights; the second carries gpu/ and runs this stage).
# Usage: bash scripts/gpu/device.sh [STAGES]   (STAGES: default "smoke finetune bench")
set -uo pipefail
out="${OUT:-/tmp/gpu-out}"
mkdir -p "$out"
stages="${1:-smoke finetune bench}"
if [ "$stages" = weights ]; then
  # A call of its own that leaves gpu-w's packed weights in /tmp/keep for the next call on this
  # warm machine (a model too large to travel beside the binary and the data in one call).
  mkdir -p /tmp/keep && cp gpu-w/*.f16.xz /tmp/keep/ && ls -la /tmp/keep | tee "$out/keep.txt"
  exit
fi
log() { echo "== $(date +%T) $*" | tee -a "$out/summary.txt"; }
py=python3
w=/tmp/tw
mkdir -p $w
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
log "unpacking"
$py - <<'PY' || exit 1
import lzma, shutil, os
shutil.copyfileobj(lzma.open("gpu/toolret.xz"), open("/tmp/tw/toolret", "wb"))
os.chmod("/tmp/tw/toolret", 0o755)
PY
tar -C $w -xJf gpu/data.tar.xz
data=$w/shared/datasets/toollens
vocab=$w/shared/vocab/bert-base-uncased-vocab.txt
# MiniLM's weights travel in gpu/ or, packed with GENERAL=1, in gpu-w/ by an earlier call (stage weights).
mw=gpu/minilm.f16.xz
[ -f "$mw" ] || mw=/tmp/keep/minilm.f16.xz
if [ -f "$mw" ] && [ -d gpu/minilm ]; then
  rm -rf $w/minilm && cp -r gpu/minilm $w/minilm
  $py scripts/gpu/f16pack.py unpack "$mw" $w/minilm/model.safetensors || exit 1
fi
# A model packed by `MODELS=NAME scripts/gpu/pack.sh`: its files in gpu/NAME, its weights in
# gpu-w/NAME.f16.xz, or in /tmp/keep where an earlier call on this machine left them (stage weights).
for m in $(ls gpu/models 2>/dev/null); do
  wf=gpu-w/$m.f16.xz
  [ -f "$wf" ] || wf=/tmp/keep/$m.f16.xz
  [ -f "$wf" ] || { log "no weights for $m (gpu-w/$m.f16.xz or /tmp/keep)"; exit 1; }
  rm -rf $w/$m && cp -r gpu/models/$m $w/$m
  $py scripts/gpu/f16pack.py unpack "$wf" $w/$m/model.safetensors || exit 1
done
[ -d gpu/whl ] && $py -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site gpu/whl/*.whl && export PYTHONPATH=/tmp/site
tr=$w/toolret
# The CUDA plugin, laid out as scripts/install-xla-cuda.sh does (TOOLRET_CACHE/xla-cuda/nvidia).
export TOOLRET_CACHE=$w/cache
nv=$TOOLRET_CACHE/xla-cuda/nvidia
site=$($py -c 'import jax_plugins.xla_cuda13 as p, os; print(os.path.dirname(p.__file__))')
sp=$(dirname "$(dirname "$site")")
mkdir -p "$nv"
cp "$site/xla_cuda_plugin.so" "$nv/pjrt_c_api_cuda_plugin.so"
for d in "$sp"/nvidia/*/; do ln -sfn "$d" "$nv/$(basename "$d")"; done
ptxas=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null || true)
[ -e "$nv/bin/ptxas" ] || { [ -n "$ptxas" ] && mkdir -p "$nv/bin" && ln -sf "$ptxas" "$nv/bin/ptxas"; }
[ -e "$nv/nvvm" ] || { [ -d /usr/local/cuda/nvvm ] && ln -sfn /usr/local/cuda/nvvm "$nv/nvvm"; }
ls -la "$nv" >"$out/layout.txt"; echo "plugin from $site; ptxas $ptxas" >>"$out/layout.txt"
export LD_LIBRARY_PATH="$(ls -d "$sp"/nvidia/*/lib 2>/dev/null | paste -sd:):${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1 TOOLRET_NO_SIMD_WARNING=1
# ONNX Runtime for the evaluations on this machine's CPUs (packed with GENERAL=1).
if [ -f gpu/ort.xz ]; then
  mkdir -p $TOOLRET_CACHE/onnxruntime
  xz -dc gpu/ort.xz >$TOOLRET_CACHE/onnxruntime/libonnxruntime.so.1 || exit 1
fi

if [[ " $stages " == *" smoke "* ]]; then
  log "smoke: toolret bench train -backend xla:cuda (today shape, 3 steps)"
  timeout 240 $tr bench train -backend xla:cuda -shape today -steps 3 -python "" 2>&1 | tee "$out/smoke.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || { log "xla:cuda smoke FAILED"; exit 2; }
fi

if [[ " $stages " == *" finetune "* ]]; then
  common=(-batch 64 -epochs 1 -lr 5e-5 -query-len 32 -tool-len 128 -seed 1)
  log "fine-tune: toolret xla:cuda"
  t0=$SECONDS
  timeout 420 $tr train biencoder -data $data -init $w/minilm -run $w/runs/toolret "${common[@]}" \
    -pad-multiple 32 -backend xla:cuda -quiet >"$out/ft-toolret.log" 2>&1
  log "toolret train rc=$? wall $((SECONDS - t0)) s"
  tail -5 "$out/ft-toolret.log"
  cp $w/runs/toolret/metrics.jsonl "$out/ft-toolret-metrics.jsonl" 2>/dev/null
  log "fine-tune: sentence-transformers on cuda (fp32, same pairs and hyper-parameters as the toolret run)"
  ST_DEVICE=cuda ST_PRECISION=fp32 timeout 420 $py scripts/pretrained/st_finetune.py $w/minilm $data $w/runs/toolret $w/runs/st \
    >"$out/ft-st.log" 2>&1
  log "st train rc=$? $(tail -1 "$out/ft-st.log")"
  log "eval (toolret eval, go backend on this machine's CPUs)"
  for m in toolret:$w/runs/toolret st:$w/runs/st/model zero-shot:$w/minilm; do
    timeout 300 $tr eval -data $data -model "${m#*:}" -backend go -json >"$out/eval-${m%%:*}.json" 2>"$out/eval-${m%%:*}.err"
    log "eval ${m%%:*} rc=$? $(cat "$out/eval-${m%%:*}.json" | head -c 400)"
  done
fi

if [[ " $stages " == *" bench "* ]]; then
  log "bench: sentence-transformers (one process, every shape, batch and precision)"
  timeout 300 $py scripts/gpu/st_bench.py $data $vocab minilm,bge-small,bert-base 32,64 20 fp32,tf32,bf16 32 \
    >"$out/bench-st.jsonl" 2>"$out/bench-st.err"
  log "st bench rc=$?"
  for shape in minilm:6:384:12:1536 bge-small:12:384:12:1536 bert-base:12:768:12:3072; do
    IFS=: read -r name L H NH I <<<"$shape"
    for b in 32 64; do
      log "bench: toolret xla:cuda $name batch $b"
      timeout 150 $tr bench train -backend xla:cuda -layers $L -hidden $H -heads $NH -intermediate $I -vocab-size 30522 \
        -batch $b -query-len 32 -tool-len 128 -lengths toollens -data $data -vocab $vocab -pad-multiple 32 -steps 20 -python "" \
        >"$out/bench-toolret-$name-$b.txt" 2>&1
      grep '^toolret-' "$out/bench-toolret-$name-$b.txt" | tee -a "$out/summary.txt"
    done
  done
  cat "$out/bench-st.jsonl" >>"$out/summary.txt"
fi

if [[ " $stages " == *" kinds "* ]]; then
  log "kinds: every model kind from all-MiniLM-L6-v2 on xla:cuda (scripts/pretrained/kinds.sh ${KINDS:-})"
  TR=$tr DATA=$data INIT=$w/minilm BACKEND=xla:cuda RUNS=$w/runs/kinds OUT=$w/kinds-out SUMMARY="$out/summary.txt" \
    timeout "${KINDS_TIMEOUT:-540}" bash scripts/pretrained/kinds.sh ${KINDS:+"$KINDS"}
  log "kinds rc=$?"
  tar -C $w -czf "$out/kinds.tar.gz" kinds-out $(cd $w && ls runs/kinds/*/metrics.jsonl runs/kinds/*/first_stage_weight.json 2>/dev/null)
fi
if [[ " $stages " == *" seeds "* || " $stages " == *" mlc "* ]]; then
  # Imprinted MLC runs (10 epochs, lr 1e-4, 48 tokens) trained side by side on the one GPU
  # (preallocate=false: each process takes GPU memory as it needs it), on the dev split of
  # gpu/first-stage (a bi-encoder run's run.json, no weights: the CPU run's split); each run's
  # dev and test rankings (top 100) come back for the ensemble. Stage seeds: more seeds
  # (MLC_SEEDS, default "2 3") of the MiniLM recipe (the CPU run runs/std-imp10/mlc is seed 1).
  # Stage mlc: MLC_RUNS, each MODEL:POOLING:SEED (MODEL a folder of gpu/models or minilm), e.g.
  # "bge:cls:1 bge:mean:1". Run tags: sSEED for the seeds stage, MODEL-POOLING-sSEED for mlc.
  specs=""
  [[ " $stages " == *" seeds "* ]] && for s in ${MLC_SEEDS:-2 3}; do specs+=" minilm:mean:$s"; done
  [[ " $stages " == *" mlc "* ]] && specs+=" ${MLC_RUNS:-bge:cls:1}"
  log "mlc: imprinted MLC runs$specs, side by side on ${MLC_BACKEND:-xla:cuda,preallocate=false} (-max-time ${MLC_MAX_TIME:-390s})"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 1000 >$w/gpumem.txt 2>/dev/null &
  smi=$!
  tags=""
  for spec in $specs; do
    IFS=: read -r m pool s <<<"$spec"
    t=s$s
    [[ " $stages " == *" seeds "* && "$m:$pool" == minilm:mean ]] || t=$m-$pool-s$s
    tags+=" $t"
    ( /usr/bin/time -f "%M" -o $w/mlc-$t.maxrss $tr train classifier -kind mlc -loss softmax -data $data -init $w/$m \
        -first-stage gpu/first-stage -run $w/runs/mlc-$t -batch 64 -epochs "${MLC_EPOCHS:-10}" -lr 1e-4 -max-len 48 -seed $s \
        -pooling $pool -head-init tools -backend "${MLC_BACKEND:-xla:cuda,preallocate=false}" -max-time "${MLC_MAX_TIME:-390s}" -quiet \
        >$w/mlc-$t.log 2>&1
      log "$t train rc=$? $(grep -E '^trained' $w/mlc-$t.log | tail -1) peak RSS $(awk '{printf "%.2f GiB", $1/1048576}' $w/mlc-$t.maxrss)"
      for split in dev test; do
        timeout "${EVAL_TIMEOUT:-150}" $tr eval -data $data -run $w/runs/mlc-$t -split $split -k 100 -backend go -save-run $w/mlc-$t.$split.trec \
          >$w/mlc-$t.$split.txt 2>&1
        log "$t eval $split rc=$? $(grep -E '^(all| +queries)' $w/mlc-$t.$split.txt | tr -s ' ' | tr '\n' ' ')"
      done ) &
  done
  wait $(jobs -p | grep -vx "$smi")
  kill $smi 2>/dev/null
  log "peak GPU memory (all runs together, sampled each second): $(sort -n $w/gpumem.txt | tail -1) MiB"
  # One archive a run (a call returns at most 8 files of 16 MiB: one run's two rankings are
  # 14 MB raw, about 3 MB in xz).
  for t in $tags; do
    (cd $w && tar -cf - mlc-$t.* runs/mlc-$t/metrics.jsonl runs/mlc-$t/summary.json runs/mlc-$t/test_metrics.json \
      runs/mlc-$t/run.json 2>/dev/null) | xz -T4 -6 >"$out/${t/#s/seed}.tar.xz"
  done
fi
if [[ " $stages " == *" general "* ]]; then
  # `make general` end to end (scripts/pretrained/general.sh, as shipped: its defaults), with
  # step 1's training on the GPU (xla:cuda; batches padded to multiples of 32 tokens: fewer
  # shapes to compile) and every evaluation on ONNX Runtime over this machine's CPU cores (the
  # WiSE-FT weights JOBS at a time, default 5).
  # Resumable: general.sh skips the steps whose outputs exist, and /tmp outlives a call on a warm
  # machine, so a second call with the same stage goes on where a first one was cut.
  log "general: make general (scripts/pretrained/general.sh), training on xla:cuda, evaluations on onnx ($(nproc) cores)"
  lscpu | grep -E '^Model name|^CPU\(s\)' | tee -a "$out/summary.txt"
  lscpu | grep -o 'avx512_bf16\|amx_bf16\|avx512f\|avx2' | sort -u | paste -sd' ' | tee -a "$out/summary.txt"
  # general.sh reports training's peak memory through GNU time; without it, a stand-in that runs the command
  [ -x /usr/bin/time ] || { log "general: no /usr/bin/time here: peak RSS not reported"; printf '#!/bin/sh\nshift\nexec "$@"\n' >/usr/bin/time; chmod +x /usr/bin/time; }
  mkdir -p bin && cp $tr bin/toolret
  t0=$SECONDS
  PREBUILT=1 BACKEND=onnx JOBS="${JOBS:-5}" TRAIN_BACKEND=xla:cuda TRAIN_ARGS="-pad-multiple 32" MODEL=$w/minilm OUT=$w/general \
    TOOLRET_DATASETS=$w/shared/datasets timeout "${GENERAL_TIMEOUT:-540}" bash scripts/pretrained/general.sh 2>&1 | tee -a "$out/general.log"
  log "general rc=${PIPESTATUS[0]} wall $((SECONDS - t0)) s this call"
  (cd $w && tar -cf - general/*.txt general/*.choice general/*.md general/*.json general/train.log general/ft/metrics.jsonl \
    general/ft/summary.json general/ft/run.json general/model/toolret_recipe.json 2>/dev/null) | xz -T4 >"$out/general.tar.xz"
fi
log "done"
