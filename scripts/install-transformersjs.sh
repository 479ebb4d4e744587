#!/usr/bin/env bash
# Installs transformers.js (@huggingface/transformers, pinned) with npm into a cache directory,
# for export's test that loads toolret's HF exports with it (export/transformersjs_test.go).
# Nothing is committed to the repository.
# Usage: scripts/install-transformersjs.sh [DEST_DIR]
# Default DEST_DIR: ${TOOLRET_CACHE:-$HOME/.cache/toolret}/npm; prints DEST_DIR when done.
set -euo pipefail
version="${TRANSFORMERS_JS_VERSION:-4.3.1}"
dest="${1:-${TOOLRET_CACHE:-$HOME/.cache/toolret}/npm}"
pkg="$dest/node_modules/@huggingface/transformers/package.json"
if [ -f "$pkg" ] && grep -q "\"version\": \"$version\"" "$pkg"; then
  echo "$dest"
  exit 0
fi
command -v npm >/dev/null || { echo "install-transformersjs: npm is required (apt-get install npm)" >&2; exit 1; }
mkdir -p "$dest"
cat > "$dest/package.json" <<JSON
{
  "name": "toolret-transformersjs",
  "private": true,
  "description": "transformers.js for toolret's export tests (scripts/install-transformersjs.sh)",
  "dependencies": { "@huggingface/transformers": "$version" }
}
JSON
# --ignore-scripts: onnxruntime-node ships its CPU binaries in the tarball, sharp's come as
# optional packages; no install script needs to run (or reach the network).
(cd "$dest" && npm install --ignore-scripts --no-audit --no-fund --silent)
[ -f "$pkg" ] || { echo "install-transformersjs: $pkg missing after npm install" >&2; exit 1; }
echo "$dest"
