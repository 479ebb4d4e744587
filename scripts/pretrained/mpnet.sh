#!/usr/bin/env bash
# all-mpnet-base-v2 zero-shot (docs/results/2026-11-26-mpnet.md): ToolLens's standard test
# split against MiniLM zero-shot and BM25; its held-out-tool views (-holdout-tools 0.2, seeds
# SEEDS) alone and fused with the MiniLM fine-tuned on each view and BM25 (zscore, weights
# chosen on the fine-tuned run's dev split); BFCL (test only) against BM25 and MiniLM.
# MPNet ranks every ToolLens query once (a copy of ToolLens whose test split holds all 18,770
# queries, in a temporary directory): the held-out views keep all 464 tools in the corpus, so
# a view's rankings are that file's rows for its queries, and the fusions read them from it.
# Usage: scripts/pretrained/mpnet.sh [SEEDS]   (default "1 2 3"; needs `make models`; the
#   fine-tuned runs HO/hSEED of experiments/2026-11-24-held-out-tools/minilm-ho.sh, default HO=runs/ho7-150)
# Prints one line per row: VIEW SYSTEM R@1 R@3 R@5 N@5 C@5; rankings and JSONs go to OUT
#   (default runs/mpnet).
set -euo pipefail
source "$(dirname "$0")/build.sh"
seeds="${1:-1 2 3}"
mpnet=sentence-transformers/all-mpnet-base-v2
minilm=sentence-transformers/all-MiniLM-L6-v2
tl=../shared/datasets/toollens
bf=../shared/datasets/bfcl
ho="${HO:-runs/ho7-150}"
out="${OUT:-runs/mpnet}"
mkdir -p "$out"
row() { # VIEW SYSTEM JSON-FILE
  python3 -c 'import json,sys; m=json.load(open(sys.argv[3])); print(sys.argv[1], sys.argv[2], *("%.2f" % m[k] for k in ("recall@1","recall@3","recall@5","ndcg@5","comp@5")))' "$@"
}
# eval NAME ARGS...: bin/toolret eval ARGS -json into OUT/NAME.json (skipped when it is there).
ev() {
  local name=$1
  shift
  [ -s "$out/$name.json" ] || bin/toolret eval "$@" -json >"$out/$name.json.tmp" 2>"$out/$name.err"
  [ -s "$out/$name.json.tmp" ] && mv "$out/$name.json.tmp" "$out/$name.json"
  return 0
}
if [ ! -s "$out/all-zs.trec" ]; then
  all=$(mktemp -d)
  trap 'rm -rf "$all"' EXIT
  mkdir -p "$all/qrels"
  for f in corpus.jsonl queries.jsonl scene_tool.txt query_scene_train.txt; do ln -s "$(realpath "$tl/$f")" "$all/$f"; done
  cp "$tl/qrels/train.tsv" "$all/qrels/train.tsv"
  { cat "$tl/qrels/train.tsv"; echo; tail -n +2 "$tl/qrels/test.tsv"; } | grep -v '^$' >"$all/qrels/test.tsv"
  { cat "$tl/query_scene_train.txt"; echo; cat "$tl/query_scene_test.txt"; } | grep -v '^$' >"$all/query_scene_test.txt"
  /usr/bin/time -f "%e s, peak RSS %M KB" -o "$out/all-zs.time" \
    bin/toolret eval -data "$all" -model $mpnet -backend "$be" -save-run "$out/all-zs.trec.tmp" >"$out/all-zs.txt" 2>"$out/all-zs.err"
  mv "$out/all-zs.trec.tmp" "$out/all-zs.trec"
fi
ev standard-bm25 -data $tl -method bm25 -save-run "$out/standard-bm25.trec"
ev standard-minilm -data $tl -model $minilm -backend "$be" -save-run "$out/standard-minilm.trec"
ev standard-mpnet -data $tl -method fusion -runs "$out/all-zs.trec" -save-run "$out/standard-mpnet.trec"
for s in bm25 minilm mpnet; do row standard "$s" "$out/standard-$s.json"; done
bin/toolret eval -data $tl -compare "$out/standard-minilm.trec,$out/standard-mpnet.trec" >"$out/standard-compare.txt" 2>&1
for seed in $seeds; do
  v=(-holdout-tools 0.2 -holdout-seed "$seed")
  ev "h$seed-bm25" -data $tl "${v[@]}" -method bm25 -save-run "$out/h$seed-bm25.trec"
  ev "h$seed-mpnet" -data $tl "${v[@]}" -method fusion -runs "$out/all-zs.trec" -save-run "$out/h$seed-mpnet.trec"
  for s in bm25 mpnet; do row "holdout$seed" "$s" "$out/h$seed-$s.json"; done
  if [ -f "$ho/h$seed/run.json" ]; then
    ev "h$seed-ft-mpnet-bm25" -data $tl "${v[@]}" -method fusion -runs "run:$ho/h$seed,$out/all-zs.trec,bm25" -save-run "$out/h$seed-ft-mpnet-bm25.trec"
    row "holdout$seed" "fine-tuned+mpnet+bm25" "$out/h$seed-ft-mpnet-bm25.json"
    # Against the MiniLM three-way (h$seed-compare.txt) and its own first stage, fine-tuned + BM25
    # (h$seed-compare-first.txt), both written by experiments/2026-11-24-held-out-tools/minilm-ho.sh.
    [ -f "$ho/h$seed-zs-bm25.trec" ] &&
      bin/toolret eval -data $tl "${v[@]}" -compare "$ho/h$seed-zs-bm25.trec,$out/h$seed-ft-mpnet-bm25.trec" >"$out/h$seed-compare.txt" 2>&1
    [ -f "$ho/h$seed-bm25.trec" ] &&
      bin/toolret eval -data $tl "${v[@]}" -compare "$ho/h$seed-bm25.trec,$out/h$seed-ft-mpnet-bm25.trec" >"$out/h$seed-compare-first.txt" 2>&1
  fi
done
ev bfcl-bm25 -data $bf -method bm25 -save-run "$out/bfcl-bm25.trec"
ev bfcl-minilm -data $bf -model $minilm -backend "$be" -save-run "$out/bfcl-minilm.trec"
ev bfcl-mpnet -data $bf -model $mpnet -backend "$be" -save-run "$out/bfcl-mpnet.trec"
for s in bm25 minilm mpnet; do row bfcl "$s" "$out/bfcl-$s.json"; done
