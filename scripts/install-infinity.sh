#!/usr/bin/env bash
# Installs infinity (infinity-emb 0.0.78, the embedding server) into one venv outside the
# repository, ${TOOLRET_CACHE:-~/.cache/toolret}/infinity-venv, for
# experiments/2026-11-26-serve-vs-infinity/bench-serve-vs-infinity.sh. Prints the venv's python. Idempotent: an existing venv
# that imports infinity_emb is kept.
#
# infinity pins numpy<2 and sentence-transformers<4, so it cannot share the reference venv
# (scripts/install-st.sh: sentence-transformers 6, numpy 2). It does share that venv's torch:
# torch (and the libraries its Linux wheel loads at import) is linked into this venv from
# there instead of being downloaded and unpacked a second time (several GB); pip then sees it
# installed. Downloads go through the pip cache ${TOOLRET_CACHE}/pip-http. infinity's optimum
# (ONNX) engine is not installed: with this torch, optimum 2.x fails on a local model directory
# (infinity 0.0.78 passes it an absolute file name) and optimum 1.x does not import.
set -euo pipefail
cache="${TOOLRET_CACHE:-$HOME/.cache/toolret}"
venv="$cache/infinity-venv"
check='import infinity_emb, torch, sentence_transformers'
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then
  echo "$venv/bin/python"
  exit 0
fi
here="$(cd "$(dirname "$0")" && pwd)"
st_python="$("$here/install-st.sh")"
st_site="$("$st_python" -c 'import site; print(site.getsitepackages()[0])')"
python3 -m venv "$venv"
site="$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')"
shopt -s nullglob
for p in "$st_site"/torch "$st_site"/torch-*.dist-info "$st_site"/torchgen "$st_site"/functorch \
         "$st_site"/triton "$st_site"/triton-*.dist-info "$st_site"/nvidia "$st_site"/nvidia_*.dist-info; do
  ln -sfn "$p" "$site/$(basename "$p")"
done
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check --cache-dir "$cache/pip-http")
"${pip[@]}" 'infinity-emb[server,torch]==0.0.78' >&2
"$venv/bin/python" -c "$check"
echo "$venv/bin/python"
