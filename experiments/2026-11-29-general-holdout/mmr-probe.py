#!/usr/bin/env python3
"""Diversified top 5 (maximal marginal relevance) over a saved ranking: a probe, not a stage.

For each query of a run (eval -save-run X.json) whose ids start with PREFIX, the top DEPTH
tools are re-picked greedily, five times, by s_i - beta * max_j sim(i, j) over the tools j
already picked (s: the run's scores min-max normalised over the top DEPTH; sim: cosine of the
tool vectors of an index exported with the same model, export -format index). Printed: R@5 and
N@5 per (depth, beta) against QRELS (BEIR tsv). beta 0 is the run as it is.
Usage: mmr-probe.py RUN.json INDEX_DIR PREFIX QRELS.tsv   (needs numpy, safetensors)
"""
import collections
import json
import math
import sys

import numpy as np
from safetensors.numpy import load_file

run = json.load(open(sys.argv[1]))
idx = sys.argv[2]; prefix = sys.argv[3]; qrels = sys.argv[4]
emb = load_file(idx + "/tools.safetensors")
E = list(emb.values())[0] if len(emb) == 1 else emb[[k for k in emb if 'tool' in k or 'emb' in k][0]]
E = E / np.linalg.norm(E, axis=1, keepdims=True)
ids = [json.loads(l)["id"] for l in open(idx + "/tools.jsonl")]
pos = {t: i for i, t in enumerate(ids)}
rel = collections.defaultdict(set)
for i, l in enumerate(open(qrels)):
    if i == 0: continue
    a = l.split("\t"); rel[a[0]].add(a[1])
S = E @ E.T
def mmr(cands, scores, beta, k=5):
    s = np.array(scores); s = (s - s.min()) / (s.max() - s.min() + 1e-9)
    chosen = []; left = list(range(len(cands)))
    while left and len(chosen) < k:
        best = max(left, key=lambda i: s[i] - beta * (max(S[cands[i], cands[j]] for j in chosen) if chosen else 0))
        chosen.append(best); left.remove(best)
    return [cands[i] for i in chosen]
def ndcg(top, r):
    dcg = sum(1 / math.log2(i + 2) for i, t in enumerate(top) if t in r)
    idcg = sum(1 / math.log2(i + 2) for i in range(min(len(r), 5)))
    return dcg / idcg
qs = [q for q in run if q.startswith(prefix)]
for depth in (10, 20):
  for beta in (0, 0.1, 0.2, 0.3, 0.5, 0.8):
    R = N = 0; n = 0
    for q in qs:
        qid = q.split(":", 1)[1]
        r = {pos[t] for t in rel.get(qid, ())}
        if not r: continue
        items = sorted(run[q].items(), key=lambda x: -x[1])[:depth]
        cands = [pos[t.split(":", 1)[1]] for t, _ in items]
        top = mmr(cands, [v for _, v in items], beta)
        R += len(set(top) & r) / len(r); N += ndcg(top, r); n += 1
    print(f"depth {depth} beta {beta}: {n} queries R@5 {100*R/n:.2f} N@5 {100*N/n:.2f}")
