#!/usr/bin/env python3
"""How much of a held-out-tool view's R@5 a system can reach without finding new tools, and how a
ranking splits between seen and new tools.

Per test query of a view (every query that needs a held-out tool), R@5 is hits / relevant tools
(as cmd/eval). Printed: the test queries, relevant and held-out tools per query, the R@5 of a
system that ranks every seen relevant tool first and no held-out one ("seen-only bound"), and,
for each TREC run given, its R@5 split into the seen and the held-out relevant pairs, with
R@5 = seen share x seen-pair R@5 + new share x new-pair R@5 (each query weighted by 1/relevant).
`eval -run`'s report has a related figure (metrics.Report.ToolRecall: recall over the pairs of
each group, a tool seen when the run trained on it, so dev-split tools count as unseen); this
script splits by the view's held-out list, weights pairs so that the parts add up to R@5, and
reads any TREC file (fusions and indexes included, whose reports have no such split).
Usage:
  toolret convert -from TL -holdout-tools 0.2 -holdout-seed S -format beir -to /tmp/hoS
  python3 experiments/2026-11-24-held-out-tools/bound.py /tmp/hoS [RUN.trec ...]
"""
import collections
import sys

import heldout


def ranking(path):
    """TREC run -> query id -> tool ids by rank."""
    runs = collections.defaultdict(list)
    for line in open(path):
        q, _, doc, rank = line.split()[:4]
        runs[q].append((int(rank), doc))
    return {q: [d for _, d in sorted(v)] for q, v in runs.items()}


def main(view, runs):
    v = heldout.View(view)
    n = len(v.test)
    rel = sum(len(r) for r in v.test.values()) / n
    new = sum(len(r & v.held) for r in v.test.values()) / n
    bound = sum(min(5, len(r - v.held)) / len(r) for r in v.test.values()) / n
    print(f"{view}: {n} test queries, {rel:.2f} relevant tools per query, {new:.2f} held out; "
          f"seen-only bound R@5 {100 * bound:.2f}")
    for path in runs:
        r = ranking(path)
        tot = seen = newc = 0.0
        for q, rs in v.test.items():
            top = {v.ti[d] for d in r.get(q, [])[:5]}
            for t in rs:
                hit = (t in top) / len(rs)
                tot += hit
                if t in v.held:
                    newc += hit
                else:
                    seen += hit
        print(f"{path}: R@5 {100 * tot / n:.2f} = seen pairs {100 * seen / n:.2f} + new pairs {100 * newc / n:.2f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    try:
        main(sys.argv[1], sys.argv[2:])
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"bound.py: {type(e).__name__}: {e}")
