#!/usr/bin/env bash
# Packs what scripts/gpu/device.sh needs on a GPU machine that reaches no network into gpu/
# (ignored by git; about 55 MB): toolret built with -tags xla (stripped, xz), all-MiniLM-L6-v2
# from the HF hub cache (`make models`) with its weights stored as float16 (scripts/gpu/f16pack.py) to fit a 64 MiB
# transfer (device.sh upcasts them to float32 there, and both toolret and sentence-transformers
# start from those same weights), ToolLens and the BERT vocabulary from ../shared, and the two
# wheels sentence-transformers' trainer needs beyond that machine's image (datasets' dill and
# multiprocess, plus datasets itself), fetched with pip as a downloader.
# MODELS="bge" adds BAAI/bge-small-en-v1.5 for device.sh's mlc stage: its files in gpu/models/bge,
# its weights in gpu-w/bge.f16.xz (float16, lossless for bge, whose float32 weights all are float16
# values; 54 MiB packed by scripts/gpu/f16pack.py), too large to travel beside the rest: one call
# carries gpu-w and runs `device.sh weights`, the next, on the same warm machine, carries gpu.
# MINILM=0 leaves MiniLM's weights and the wheels out (the mlc stage needs neither).
# GENERAL=1 packs for device.sh's general stage (`make general` there): toolret built with the
# onnx and xla tags, ONNX Runtime's library (gpu/ort.xz), every dataset general.sh reads (toollens,
# toolmix, zeroshot, bfcl), and MiniLM's weights in gpu-w/minilm.f16.xz (they do not fit beside
# the rest: a first call carries gpu-w and runs `device.sh weights`); no wheels.
# Usage: [FIRST_STAGE=RUN] [MODELS=bge] [MINILM=0] [GENERAL=1] scripts/gpu/pack.sh      (then run scripts/gpu/device.sh there with gpu/ beside it)
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=go1.27.4 GOEXPERIMENT=simd GOFLAGS=-buildvcs=false
py="${TOOLRET_CACHE:-$HOME/.cache/toolret}/venv/bin/python"
hub="${HF_HUB_CACHE:-${HF_HOME:-$HOME/.cache/huggingface}/hub}"
snap=$(ls -d "$hub"/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/* | head -1)
general="${GENERAL:-0}"
tags=xla
[ "$general" = 1 ] && tags="onnx xla"
mkdir -p gpu/minilm/1_Pooling gpu/whl .git/info
grep -qx '/gpu/' .git/info/exclude 2>/dev/null || echo /gpu/ >>.git/info/exclude
if [ ! -f gpu/toolret.xz ] || [ "$(cat gpu/toolret.tags 2>/dev/null)" != "$tags" ] ||
  [ -n "$(find . -path ./gpu -prune -o -name '*.go' -newer gpu/toolret.xz -print | head -1)" ]; then
  go build -tags "$tags" -trimpath -ldflags='-s -w' -o gpu/toolret ./cmd/toolret
  xz -T2 -9 -c gpu/toolret >gpu/toolret.xz.tmp && mv gpu/toolret.xz.tmp gpu/toolret.xz && rm gpu/toolret
  echo "$tags" >gpu/toolret.tags
fi
rm -f gpu/ort.xz
if [ "$general" = 1 ]; then
  ort="${TOOLRET_CACHE:-$HOME/.cache/toolret}/onnxruntime/libonnxruntime.so.1"
  [ -f "$ort" ] || { echo "pack: $ort missing: make install-onnx" >&2; exit 1; }
  xz -T2 -9 -c "$ort" >gpu/ort.xz
fi
if [ "${MINILM:-1}" = 1 ]; then
for f in config.json config_sentence_transformers.json modules.json sentence_bert_config.json special_tokens_map.json \
  tokenizer.json tokenizer_config.json vocab.txt 1_Pooling/config.json; do
  cp -L "$snap/$f" "gpu/minilm/$f"
done
if [ "$general" = 1 ]; then
  mkdir -p gpu-w && rm -f gpu/minilm.f16.xz
  grep -qx '/gpu-w/' .git/info/exclude 2>/dev/null || echo /gpu-w/ >>.git/info/exclude
  [ -f gpu-w/minilm.f16.xz ] || "$py" scripts/gpu/f16pack.py pack "$snap/model.safetensors" gpu-w/minilm.f16.xz
else
  [ -f gpu/minilm.f16.xz ] || "$py" scripts/gpu/f16pack.py pack "$snap/model.safetensors" gpu/minilm.f16.xz
fi
else
  rm -rf gpu/minilm.f16.xz gpu/minilm gpu/whl
fi
declare -A hubid=([bge]=BAAI/bge-small-en-v1.5 [minilm]=sentence-transformers/all-MiniLM-L6-v2)
rm -rf gpu/models
for m in ${MODELS:-}; do
  id=${hubid[$m]:?"unknown model $m (known: ${!hubid[*]})"}
  msnap=$(ls -d "$hub/models--${id/\//--}"/snapshots/* | head -1)
  mkdir -p gpu/models/$m gpu-w
  grep -qx '/gpu-w/' .git/info/exclude 2>/dev/null || echo /gpu-w/ >>.git/info/exclude
  (cd "$msnap" && find -L . -type f ! -name 'model.safetensors' ! -name '*.bin' ! -name '*.onnx' ! -path './onnx/*' -print0) |
    (cd "$msnap" && xargs -0 cp -L --parents -t "$OLDPWD/gpu/models/$m")
  [ -f gpu-w/$m.f16.xz ] || "$py" scripts/gpu/f16pack.py pack "$msnap/model.safetensors" gpu-w/$m.f16.xz
done
# The "seeds" stage's dev split: a bi-encoder run's records without its weights (FIRST_STAGE,
# default runs/tl-minilm, the first stage of the CPU's imprinted MLC).
fsr="${FIRST_STAGE:-runs/tl-minilm}"
if [ -f "$fsr/run.json" ]; then
  rm -rf gpu/first-stage && mkdir -p gpu/first-stage
  for f in run.json biencoder.json train_config.json summary.json; do [ -f "$fsr/$f" ] && cp "$fsr/$f" gpu/first-stage/; done
fi
sets=(shared/datasets/toollens)
[ "$general" = 1 ] && sets+=(shared/datasets/toolmix shared/datasets/zeroshot shared/datasets/bfcl)
tar -C .. -cJf gpu/data.tar.xz "${sets[@]}" shared/vocab/bert-base-uncased-vocab.txt
rm -rf gpu/whl/*
[ "${MINILM:-1}" = 1 ] && [ "$general" != 1 ] && "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d gpu/whl datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
du -sh gpu gpu-w 2>/dev/null
