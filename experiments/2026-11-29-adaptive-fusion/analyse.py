#!/usr/bin/env python3
"""Label-free and learned BM25 fusion weights on the pooled dev split of the general model
(README.md). Input: dump's scores.tsv and qrels.tsv. Prints, per library and pooled, dev N@5
of zscore fusion at fixed dense weights, of per-query rules read from the two score
distributions, and of a per-query weight learned across libraries (leave one library out).
Needs numpy.

    python3 analyse.py SCORES.tsv QRELS.tsv
"""
import collections, math, sys
import numpy as np

scores, qrels_file = sys.argv[1], sys.argv[2]
qrels = collections.defaultdict(set)
qlib, ntools, nwords = {}, {}, {}
for line in open(qrels_file):
    q, t, lib, n, w = line.rstrip("\n").split("\t")
    qrels[q].add(t)
    qlib[q], ntools[q], nwords[q] = lib, int(n), int(w)
D, B = collections.defaultdict(list), collections.defaultdict(list)
for line in open(scores):
    k, q, t, s = line.rstrip("\n").split("\t")
    (D if k == "D" else B)[q].append((t, float(s)))
qs = sorted(q for q in qrels if q in D)
libs = sorted(set(qlib.values()))
W = [round(0.1 * i, 1) for i in range(11)]


def zs(lst):
    # rerank.Normalize's zscore: population standard deviation, all zero when it is 0
    s = np.array([x[1] for x in lst]) if lst else np.zeros(1)
    sd = s.std()
    return (s - s.mean()) / sd if sd > 0 else s * 0


def fuse(q, w):
    # fusion.Interpolate: w·z(dense) + (1-w)·z(bm25), a tool missing from a list at its lowest
    d, b = D[q], B.get(q, [])
    zd, zb = dict(zip((t for t, _ in d), zs(d))), dict(zip((t for t, _ in b), zs(b)))
    lo_d, lo_b = min(zd.values(), default=0), min(zb.values(), default=0)
    keys = set(zd) | set(zb)
    sc = {k: w * zd.get(k, lo_d) + (1 - w) * zb.get(k, lo_b) for k in keys}
    return sorted(keys, key=lambda k: -sc[k])


def ndcg5(q, ranked):
    rel = qrels[q]
    dcg = sum(1 / math.log2(i + 2) for i, t in enumerate(ranked[:5]) if t in rel)
    return dcg / sum(1 / math.log2(i + 2) for i in range(min(5, len(rel))))


Y = np.array([[ndcg5(q, fuse(q, w)) for w in W] for q in qs])  # per query, per weight
lib = np.array([qlib[q] for q in qs])


def table(title, rows):
    print(f"\n{title}\n| rule | " + " | ".join(l.replace("toolmix/", "") for l in libs) + " | pooled |")
    print("|---|" + "---:|" * (len(libs) + 1))
    for name, got in rows:
        cells = [100 * got[lib == l].mean() for l in libs] + [100 * got.mean()]
        print(f"| {name} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")


print(f"{len(qs)} dev queries; libraries: " + ", ".join(f"{l} ({(lib == l).sum()} queries, {ntools[qs[list(lib).index(l)]]} tools)" for l in libs))
table("dev N@5 of zscore fusion by dense weight (1.0: dense alone, 0.0: BM25 alone)", [(f"w {w}", Y[:, i]) for i, w in enumerate(W)])


def feats(q):
    zd, zb = zs(D[q]), zs(B.get(q, []))
    zb = zb if len(zb) > 1 else np.zeros(2)
    return zd[0], zb[0], zd[0] - zd[1], zb[0] - zb[1]


F = np.array([feats(q) for q in qs])
w0 = 0.7
odds = w0 / (1 - w0)


def pick(ws):
    idx = np.clip(np.rint(np.asarray(ws) * 10).astype(int), 0, 10)
    return Y[np.arange(len(qs)), idx]


rules = [
    ("fixed 0.7 (today's recipe)", pick(np.full(len(qs), w0))),
    ("top-1 z ratio: zd/(zd+zb)", pick(np.where(F[:, 0] + F[:, 1] > 0, F[:, 0] / np.maximum(F[:, 0] + F[:, 1], 1e-9), w0))),
    ("0.7 odds × zd/zb", pick([o / (1 + o) for o in odds * F[:, 0] / np.maximum(F[:, 1], 1e-6)])),
    ("0.7 odds × gap ratio", pick([o / (1 + o) for o in odds * (F[:, 2] + 0.1) / (F[:, 3] + 0.1)])),
    ("0.9 when BM25's top-1 z < 3", pick(np.where(F[:, 1] < 3, 0.9, w0))),
]
table("per-query rules from the two score distributions (no labels), weights rounded to 0.1", rules)

# A per-query weight learned across libraries: ridge regression of N@5 at each weight on
# features of the query and its library; the weight with the best prediction is used. Each
# library is scored by a model fitted on the other libraries' dev queries; the fixed weight
# beside it is the best on those other libraries too.
Xall = {
    "bias, log words, log tools": np.array([[1, math.log(1 + nwords[q]), math.log(ntools[q])] for q in qs]),
    "bias, the four score features": np.column_stack([np.ones(len(qs)), F]),
    "bias, all six": np.column_stack([np.ones(len(qs)), F, [math.log(1 + nwords[q]) for q in qs], [math.log(ntools[q]) for q in qs]]),
}
rows = []
for name, X in Xall.items():
    X = X.copy()
    X[:, 1:] = (X[:, 1:] - X[:, 1:].mean(0)) / X[:, 1:].std(0)
    learned, fixed = np.zeros(len(qs)), np.zeros(len(qs))
    for l in libs:
        tr, te = lib != l, lib == l
        coef = np.linalg.solve(X[tr].T @ X[tr] + 10 * np.eye(X.shape[1]), X[tr].T @ Y[tr])
        learned[te] = Y[te][np.arange(te.sum()), (X[te] @ coef).argmax(1)]
        fixed[te] = Y[te][:, Y[tr].mean(0).argmax()]
    rows.append((f"learned: {name}", learned))
rows.append(("fixed, best on the other libraries", fixed))
table("per-query weight learned across libraries (leave one library out)", rows)
