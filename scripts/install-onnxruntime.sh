#!/usr/bin/env bash
# Installs ONNX Runtime's CPU shared library (libonnxruntime.so.1) for toolret's `onnx` backend,
# taken from the npm package onnxruntime-node (the only registry this kind of machine reaches).
# Usage: scripts/install-onnxruntime.sh [DEST_DIR]
# Default DEST_DIR: ${TOOLRET_CACHE:-$HOME/.cache/toolret}/onnxruntime
# Afterwards: export ONNXRUNTIME_SHARED_LIBRARY_PATH=DEST_DIR/libonnxruntime.so.1
# (toolret also finds it there by itself).
set -euo pipefail
version="${ORT_NODE_VERSION:-1.30.0}"
dest="${1:-${TOOLRET_CACHE:-$HOME/.cache/toolret}/onnxruntime}"
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "install-onnxruntime: unsupported architecture $(uname -m)" >&2; exit 1 ;;
esac
if [ -f "$dest/libonnxruntime.so.1" ] && [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$version" ]; then
  echo "$dest/libonnxruntime.so.1"
  exit 0
fi
command -v npm >/dev/null || { echo "install-onnxruntime: npm is required (apt-get install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "onnxruntime-node@$version" >/dev/null)
tar -xzf "$tmp"/onnxruntime-node-*.tgz -C "$tmp" "package/bin/napi-v6/linux/$arch/libonnxruntime.so.1"
mkdir -p "$dest"
install -m 0644 "$tmp/package/bin/napi-v6/linux/$arch/libonnxruntime.so.1" "$dest/libonnxruntime.so.1.tmp"
mv "$dest/libonnxruntime.so.1.tmp" "$dest/libonnxruntime.so.1"
echo "$version" > "$dest/VERSION"
echo "$dest/libonnxruntime.so.1"
