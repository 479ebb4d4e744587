#!/usr/bin/env bash
# Installs the Python reference stack into one venv outside the repository:
# ${TOOLRET_CACHE:-~/.cache/toolret}/venv with sentence-transformers and torch (pip's Linux
# torch pulls the CUDA libraries it loads at import, several GB: one venv, reused), and
# huggingface_hub and peft (the LoRA adapter test). Used by the parity and hub interop tests, scripts/pretrained/*.py and the
# side-by-side fine-tuning script. Idempotent: an existing venv that imports them is kept.
set -euo pipefail
venv="${TOOLRET_CACHE:-$HOME/.cache/toolret}/venv"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import sentence_transformers, torch, huggingface_hub, datasets, accelerate, peft' 2>/dev/null; then
  echo "$venv/bin/python"
  exit 0
fi
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check sentence-transformers torch huggingface_hub datasets accelerate peft >&2
"$venv/bin/python" -c 'import sentence_transformers, torch, huggingface_hub, datasets, accelerate, peft'
echo "$venv/bin/python"
