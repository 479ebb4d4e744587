#!/usr/bin/env python3
"""What limits a dense retriever on held-out tools (README, "New tools"): per-query R@1 and R@5
(hits / relevant tools, as cmd/eval), and R@5 over the (query, held-out tool) pairs, of
  - the trained bi-encoder's cosine scores (from experiments/2026-11-24-held-out-tools/embdump), as is and with a
    per-tool score correction computed from the training queries only: CSLS (minus a * the mean
    of a tool's k best training-query scores) and per-tool centring / z-scoring;
  - lexical baselines with no training: TF-IDF cosine (log tf, smoothed idf, [a-z0-9]+ words),
    the same vectors randomly projected to 192 / 384 / 768 dimensions (the best a dense vector
    of that width can do with lexical matching alone), and a bag of layer-normed random word
    vectors mean-pooled, plain or with an idf-weighted shared component (what a BERT encoder's
    embedding layer computes before training).
Usage (PyTorch, e.g. Debian's python3-torch):
  convert -from TL -holdout-tools 0.2 -holdout-seed S -format beir -to /tmp/hoS
  export -run RUN -data /tmp/hoS -format index -out /tmp/idx
  go run -tags onnx ./experiments/2026-11-24-held-out-tools/embdump -index /tmp/idx -data /tmp/hoS -out /tmp/emb
  eval -data TL -holdout-tools 0.2 -holdout-seed S -method bm25 -save-run /tmp/bm25.trec   # optional
  /usr/bin/python3 experiments/2026-11-24-held-out-tools/capacity.py /tmp/hoS /tmp/emb [/tmp/bm25.trec]
Also printed: R@5 of the held-out pairs when only the held-out tools are ranked (is the dense
order among new tools any good, whatever their scores against the seen ones?).
"""
import collections
import math
import sys

import torch

import heldout
from heldout import words

torch.manual_seed(0)
data, emb = sys.argv[1], sys.argv[2]
v = heldout.View(data)
tools, ti, queries, test, train, held = v.tools, v.ti, v.queries, v.test, v.train, v.held
tq, trq = sorted(test), sorted(train)


def report(S, name):
    top = S.topk(5, dim=1).indices.tolist()
    r1 = r5 = hits = pairs = 0
    for q, t in zip(tq, top):
        rel = test[q]
        r1 += len(rel & set(t[:1])) / len(rel)
        r5 += len(rel & set(t)) / len(rel)
        for d in rel & held:
            pairs += 1
            hits += d in t
    n = len(tq)
    print(f"{name:44s} R@1 {100*r1/n:6.2f}  R@5 {100*r5/n:6.2f}  held-out-tool pairs R@5 {100*hits/pairs:6.2f}")


def unit(x):
    return torch.nn.functional.normalize(x, dim=1)


def rows(p):
    ids = open(p + ".txt").read().split()
    t = torch.frombuffer(bytearray(open(p + ".f32", "rb").read()), dtype=torch.float32)
    return ids, t.view(len(ids), -1)


qids, Q = rows(f"{emb}/queries")
tids, T = rows(f"{emb}/tools")
qi = {q: i for i, q in enumerate(qids)}
T = unit(T)[[tids.index(t["_id"]) for t in tools]]
Q = unit(Q)
St, Str = Q[[qi[q] for q in tq]] @ T.T, Q[[qi[q] for q in trq]] @ T.T
print(f"# {len(tq)} test queries, {len(held)} held-out tools, {len(trq)} training queries")
within = sorted(held)


def report_within(S, name):
    hits = pairs = 0
    for k, q in enumerate(tq):
        top = {within[i] for i in S[k, within].topk(5).indices.tolist()}
        for d in test[q] & held:
            pairs += 1
            hits += d in top
    print(f"{name:44s} ranking only the {len(within)} held-out tools: R@5 of their pairs {100*hits/pairs:6.2f}"
          f" (random {500/len(within):.2f})")


if len(sys.argv) > 3:  # a TREC run file of BM25 (its top 100; unranked tools score lowest)
    B = torch.full((len(tq), len(tools)), -1e9)
    row = {q: k for k, q in enumerate(tq)}
    for l in open(sys.argv[3]):
        q, _, d, _, score, _ = l.split()
        if q in row:
            B[row[q], ti[d]] = float(score)
    report(B, "BM25")
    report_within(B, "BM25")
report(St, "bi-encoder")
report_within(St, "bi-encoder")
for k in [1, 5, 20]:
    r = Str.topk(k, dim=0).values.mean(0)
    for a in [0.5, 1.0]:
        report(St - a * r, f"bi-encoder, CSLS k={k} a={a}")
report(St - Str.mean(0), "bi-encoder, per-tool centring")
report((St - Str.mean(0)) / Str.std(0), "bi-encoder, per-tool z-score")

docs = [words(t["text"]) for t in tools]
vocab = {}
for d in docs:
    for w in d:
        vocab.setdefault(w, len(vocab))
df = collections.Counter(w for d in docs for w in set(d))
idf = {w: math.log((len(docs) + 1) / (df[w] + 0.5)) for w in df}


def tfidf(ws):
    v = torch.zeros(len(vocab))
    for w, c in collections.Counter(ws).items():
        if w in vocab:
            v[vocab[w]] = (1 + math.log(c)) * idf[w]
    return v


qw = [words(queries[q]) for q in tq]
D, Qm = torch.stack([tfidf(d) for d in docs]), torch.stack([tfidf(w) for w in qw])
report(unit(Qm) @ unit(D).T, "TF-IDF cosine")
for dim in [192, 384, 768]:
    P = torch.randn(len(vocab), dim)
    report(unit(Qm @ P) @ unit(D @ P).T, f"TF-IDF randomly projected to {dim}")


def bag(lists, E):
    out = []
    for ws in lists:
        ids = [vocab[w] for w in ws if w in vocab][:64]
        if not ids:
            out.append(torch.zeros(E.shape[1]))
            continue
        x = E[ids]
        out.append(((x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True)).mean(0))
    return torch.stack(out)


lam = torch.tensor([idf[w] for w in vocab])
lam = lam / lam.max()
for dim in [192, 384, 768]:
    R, c = torch.randn(len(vocab), dim), torch.randn(dim)
    report(unit(bag(qw, R)) @ unit(bag(docs, R)).T, f"layer-normed word bag {dim}")
    E = (1 - lam).sqrt()[:, None] * c + lam.sqrt()[:, None] * R
    report(unit(bag(qw, E)) @ unit(bag(docs, E)).T, f"layer-normed word bag {dim}, idf-weighted")
