#!/usr/bin/env bash
# Installs XLA's PJRT CUDA 13 plugin and the NVIDIA libraries it loads, for toolret's `xla:cuda`
# backend (binaries built with -tags xla; an NVIDIA driver >= 580 on the machine that runs it).
# Usage: scripts/install-xla-cuda.sh [DEST_DIR]      (`make install-xla-cuda`)
# Default DEST_DIR: ${TOOLRET_CACHE:-$HOME/.cache/toolret}/xla-cuda. Prints the plugin's path.
#
# Layout (the one go-xla's own installer makes, which the plugin's RPATH expects):
#   DEST_DIR/nvidia/pjrt_c_api_cuda_plugin.so   jax-cuda13-pjrt's xla_cuda_plugin.so
#   DEST_DIR/nvidia/{cu13,cudnn,nccl,nvshmem}/  the nvidia/ trees of the NVIDIA wheels below
#   DEST_DIR/nvidia/bin/ptxas -> ../cu13/bin/ptxas
# The plugin links no CUDA library: it dlopens them through its RPATH, $ORIGIN/../nvidia/cu13/lib,
# $ORIGIN/../nvidia/cudnn/lib and $ORIGIN/../nvidia/nccl/lib, i.e. DEST_DIR/nvidia/...; go-xla
# points XLA at DEST_DIR/nvidia (ptxas, libdevice) through --xla_gpu_cuda_data_dir.
# The NVIDIA wheels are the ones jax-cuda13-plugin 0.12.0.1 requires ("with-cuda" extra), at the
# versions pinned here (about 2.4 GB of downloads, 4 GB unpacked). pip is used as a downloader
# only (no install; wheels are kept in ${TOOLRET_CACHE:-~/.cache/toolret}/pip and reused), and
# each wheel's sha256 is checked. Idempotent: an install of the same pinned set is kept. A new
# install is unpacked beside DEST_DIR and renamed into place.
#   TOOLRET_XLA_CUDA_NO_DOWNLOAD=1  use only wheels already in the pip cache (fail otherwise).
set -euo pipefail
cache="${TOOLRET_CACHE:-$HOME/.cache/toolret}"
dest="${1:-$cache/xla-cuda}"
pipdir="$cache/pip"
# package==version  wheel file  sha256
wheels="
jax-cuda13-pjrt==0.12.0.1 jax_cuda13_pjrt-0.12.0.1-py3-none-manylinux_2_27_x86_64.whl 5899bb6177eda86ea532afb9a26794f2bdd04966f6a01f9028266b16c2b6cf90
nvidia-cublas==13.10.0.20 nvidia_cublas-13.10.0.20-py3-none-manylinux1_x86_64.manylinux_2_5_x86_64.whl dcc6d63884c53d07e267ce7e6feac17b2538cebaafec5db865736c3e28e4dc84
nvidia-cuda-cupti==13.5.25 nvidia_cuda_cupti-13.5.25-py3-none-manylinux_2_25_x86_64.whl 9dcca41c12a734192b14e7128ae116bc9ce1b9da686e2ebf48ae7a4415f76650
nvidia-cuda-nvcc==13.5.37 nvidia_cuda_nvcc-13.5.37-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl f5c4f7ead5d964fb4af42bbf1e6d3ec3c1e6e9d83b53749f691d387e7fcaa3a7
nvidia-cuda-nvrtc==13.5.37 nvidia_cuda_nvrtc-13.5.37-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl 86b4d68058807988b7d9af5b44917a0601e9c337f35ccd657bfb3c759ff8d8bc
nvidia-cuda-runtime==13.5.37 nvidia_cuda_runtime-13.5.37-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl df2b79a8852f10d1fef8c848489c49eebb5754051bf870202a862831412b179d
nvidia-cudnn-cu13==9.28.1.4 nvidia_cudnn_cu13-9.28.1.4-py3-none-manylinux_2_27_x86_64.whl a54f205b1db1f2895d99f398754db1369816f0569dd459731f925635cf7b65ec
nvidia-cufft==12.5.0.14 nvidia_cufft-12.5.0.14-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl b8be26837a5abad2b5b74f3e92dd29f622a42934b355be0961a48712cbba23ad
nvidia-cusolver==12.4.1.2 nvidia_cusolver-12.4.1.2-py3-none-manylinux_2_27_x86_64.whl b3b8e02fd2f2df869369af075dc3a179d43f6f7b85e94632a7dce556697be044
nvidia-cusparse==12.9.4.2 nvidia_cusparse-12.9.4.2-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 072667e58c851a318738f5527a12eb225cbf058803f2ea451c722d8cf8edddec
nvidia-nccl-cu13==2.32.3 nvidia_nccl_cu13-2.32.3-py3-none-manylinux_2_27_x86_64.whl 1459723080ac889d73a26edfa3e04383a7928ab31ac8f0ec43b3ea9548b04ff3
nvidia-nvjitlink==13.5.37 nvidia_nvjitlink-13.5.37-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl 280d7cb9649704145f074b8dbde500de04ce02d0872e066e20a83c17bcaa93eb
nvidia-nvshmem-cu13==3.8.0 nvidia_nvshmem_cu13-3.8.0-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 81a4d1f666543e6d34df6d2ff940c7da1435e34e186aab6f3c2b48861b64ef38
nvidia-nvvm==13.5.37 nvidia_nvvm-13.5.37-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl c41bfa362e407405163f103c2229f0765f8cc2ed7d148b754dc77f228bf7e070
"
if [ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]; then
  echo "install-xla-cuda: the CUDA wheels pinned here are for Linux x86_64 only, not $(uname -s)/$(uname -m)" >&2
  exit 1
fi
plugin="$dest/nvidia/pjrt_c_api_cuda_plugin.so"
stamp=$(printf '%s' "$wheels" | sha256sum | cut -d' ' -f1)
if [ -f "$plugin" ] && [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$stamp" ]; then
  echo "$plugin"
  exit 0
fi

# Download (once) and check every wheel.
mkdir -p "$pipdir"
while read -r spec file sha; do
  [ -n "$spec" ] || continue
  if [ ! -f "$pipdir/$file" ]; then
    if [ -n "${TOOLRET_XLA_CUDA_NO_DOWNLOAD:-}" ]; then
      echo "install-xla-cuda: $pipdir/$file missing and TOOLRET_XLA_CUDA_NO_DOWNLOAD is set" >&2
      exit 1
    fi
    platform=${file%.whl}
    platform=${platform##*-}
    platform=${platform##*.}
    echo "install-xla-cuda: downloading $spec" >&2
    python3 -m pip download --quiet --no-deps --only-binary=:all: --disable-pip-version-check \
      --platform "$platform" -d "$pipdir" "$spec" >&2
  fi
  [ -f "$pipdir/$file" ] || { echo "install-xla-cuda: pip did not download $pipdir/$file" >&2; exit 1; }
  got=$(sha256sum "$pipdir/$file" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "install-xla-cuda: $pipdir/$file: sha256 $got, want $sha (delete it and run again)" >&2
    exit 1
  fi
done <<< "$wheels"

# Unpack into a fresh directory beside DEST_DIR, then rename it into place.
mkdir -p "$(dirname "$dest")"
stage="$dest.new.$$"
old="$dest.old.$$"
trap 'rm -rf "$stage" "$old"' EXIT
mkdir -p "$stage/nvidia/bin"
files=$(printf '%s\n' "$wheels" | awk 'NF == 3 { print $2 }')
# shellcheck disable=SC2086 # one wheel file name per word
(cd "$pipdir" && python3 - "$stage/nvidia" $files) <<'PY'
import os, shutil, stat, sys, zipfile
out, wheels = sys.argv[1], sys.argv[2:]
for w in wheels:
    with zipfile.ZipFile(w) as z:
        for info in z.infolist():
            name = info.filename
            if info.is_dir():
                continue
            if name == "jax_plugins/xla_cuda13/xla_cuda_plugin.so":
                dst = os.path.join(out, "pjrt_c_api_cuda_plugin.so")
            elif name.startswith("nvidia/") and ".." not in name.split("/"):
                rel = name[len("nvidia/"):]
                if rel in ("", "__init__.py") or rel.endswith("/__init__.py") or "__pycache__" in rel:
                    continue
                dst = os.path.join(out, rel)
            else:
                continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with z.open(info) as src, open(dst, "wb") as f:
                shutil.copyfileobj(src, f, 1 << 20)
            mode = (info.external_attr >> 16) & 0o777
            if dst.endswith(".so") or ".so." in os.path.basename(dst):
                mode |= 0o755
            os.chmod(dst, (mode or 0o644) | stat.S_IRUSR | stat.S_IWUSR)
if not os.path.isfile(os.path.join(out, "pjrt_c_api_cuda_plugin.so")):
    sys.exit("install-xla-cuda: no jax_plugins/xla_cuda13/xla_cuda_plugin.so in the wheels")
PY
[ -x "$stage/nvidia/cu13/bin/ptxas" ] || { echo "install-xla-cuda: no nvidia/cu13/bin/ptxas in nvidia-cuda-nvcc" >&2; exit 1; }
ln -s ../cu13/bin/ptxas "$stage/nvidia/bin/ptxas"
echo "$stamp" > "$stage/VERSION"
if [ -e "$dest" ]; then
  mv "$dest" "$old"
fi
mv "$stage" "$dest"
echo "$plugin"
