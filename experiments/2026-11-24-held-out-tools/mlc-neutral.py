#!/usr/bin/env python3
"""Re-score an MLC classifier's rankings of a held-out-tool view so that the tools it was not
trained on (no positive in its training split) get, per query, the mean score of the tools it
was trained on instead of the low score training gave them: a check of whether the
classifier's pushing new tools down is what costs a fusion its new-tool recall.

Usage: mlc-neutral.py BEIR_DIR RUN_DIR OUT.trec IN.trec [IN.trec ...]
  BEIR_DIR  the view converted to BEIR (toolret convert -holdout-tools ... -format beir)
  RUN_DIR   the classifier's run (its run.json names the dev queries carved from train)
  IN.trec   its rankings (toolret eval -run RUN_DIR -split dev|test -k 464 -save-run IN.trec)
"""
import collections
import json
import sys


def main(beir, run_dir, out_path, inputs):
    split = json.load(open(f"{run_dir}/run.json"))["split"]
    dev = set(split.get("dev_query_ids") or [])
    seen = set()
    with open(f"{beir}/qrels/train.tsv") as f:
        for i, line in enumerate(f):
            p = line.rstrip("\n").split("\t")
            if i == 0 and not p[-1].lstrip("-").isdigit():
                continue  # header
            if p[0] not in dev and float(p[2]) > 0:
                seen.add(p[1])
    n = 0
    with open(out_path + ".tmp", "w") as out:
        for path in inputs:
            runs = collections.defaultdict(list)
            with open(path) as f:
                for line in f:
                    q, _, doc, _, score, _ = line.split()
                    runs[q].append((doc, float(score)))
            for q, ranked in runs.items():
                trained = [s for d, s in ranked if d in seen]
                mean = sum(trained) / len(trained) if trained else 0.0
                rescored = sorted(((d, s if d in seen else mean) for d, s in ranked), key=lambda x: -x[1])
                for r, (d, s) in enumerate(rescored, 1):
                    out.write(f"{q} Q0 {d} {r} {s:.6f} mlc-neutral\n")
                n += 1
    import os
    os.replace(out_path + ".tmp", out_path)
    print(f"{out_path}: {n} queries, {len(seen)} tools trained on", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
