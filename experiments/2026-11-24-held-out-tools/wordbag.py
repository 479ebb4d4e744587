#!/usr/bin/env python3
"""A PyTorch sketch of the word-bag bi-encoder (README, "New tools"), written before toolret's
-arch wordbag to see whether the design could beat BM25 on held-out tools: an idf-weighted bag of
learned word vectors over whole [a-z0-9]+ words (log tf), trained with symmetric InfoNCE
(temperature 0.05, batch 64, in-batch positives masked) on every training pair of a held-out-tool
view (no dev split), test metrics after each epoch. Not toolret's model: a cross-check of it.
Usage: /usr/bin/python3 experiments/2026-11-24-held-out-tools/wordbag.py DATA DIM LR EPOCHS [freeze-idf]
  (DATA: a held-out-tool view in BEIR layout, convert -holdout-tools 0.2 -holdout-seed S -format beir)
"""
import sys, collections, math, torch, random, time
import heldout
from heldout import words
torch.set_num_threads(1); torch.manual_seed(0); random.seed(0)
data = sys.argv[1]; dim = int(sys.argv[2]); lr = float(sys.argv[3]); epochs = int(sys.argv[4]); freeze_idf = len(sys.argv) > 5
v = heldout.View(data)
tools, ti, queries, test, train, held = v.tools, v.ti, v.queries, v.test, v.train, v.held
docs = [words(t["text"]) for t in tools]
vocab = {}
for d in docs + [words(queries[q]) for q in train]:
    for w in d: vocab.setdefault(w, len(vocab))
df = collections.Counter(w for d in docs for w in set(d))
idf0 = torch.tensor([math.log((len(docs) + 1) / (df.get(w, 0) + 0.5)) for w in vocab])
def bag(ws):
    c = collections.Counter(w for w in ws if w in vocab)
    return [vocab[w] for w in c], [1 + math.log(n) for n in c.values()]
E = torch.nn.Parameter(torch.randn(len(vocab), dim) / dim**0.5)
logidf = torch.nn.Parameter(idf0.clamp(min=1e-3).log(), requires_grad=not freeze_idf)
def enc(items):
    idx, off, per = [], [], []
    for ids, tf in items:
        off.append(len(idx)); idx += ids; per += tf
    idx = torch.tensor(idx, dtype=torch.long); off = torch.tensor(off, dtype=torch.long)
    w = torch.tensor(per) * logidf.exp()[idx]
    return torch.nn.functional.normalize(torch.nn.functional.embedding_bag(idx, E, off, mode="sum", per_sample_weights=w), dim=1)
D = [bag(d) for d in docs]; tq = sorted(test); Qt = [bag(words(queries[q])) for q in tq]
def evaluate(tag):
    with torch.no_grad():
        S = enc(Qt) @ enc(D).T
    top = S.topk(5, dim=1).indices.tolist(); r1 = r5 = h = n = 0
    for q, t in zip(tq, top):
        rel = test[q]; r1 += len(rel & set(t[:1])) / len(rel); r5 += len(rel & set(t)) / len(rel)
        for d in rel & held: n += 1; h += d in t
    print(f"{tag}: R@1 {100*r1/len(tq):.2f} R@5 {100*r5/len(tq):.2f} new-tool R@5 {100*h/n:.2f}", flush=True)
pairs = [(q, d) for q in sorted(train) for d in sorted(train[q])]
opt = torch.optim.Adam([p for p in (E, logidf) if p.requires_grad], lr=lr)
evaluate("epoch 0 (untrained)")
for ep in range(epochs):
    random.shuffle(pairs); t0 = time.time()
    for i in range(0, len(pairs) - 63, 64):
        b = pairs[i:i + 64]
        qv = enc([bag(words(queries[q])) for q, _ in b]); dv = enc([D[d] for _, d in b])
        logits = qv @ dv.T / 0.05
        same = torch.tensor([[train[q].__contains__(d2) and j != k for k, (_, d2) in enumerate(b)] for j, (q, _) in enumerate(b)])
        logits = logits.masked_fill(same, -1e4)
        lab = torch.arange(len(b))
        loss = (torch.nn.functional.cross_entropy(logits, lab) + torch.nn.functional.cross_entropy(logits.T.masked_fill(same.T, -1e4), lab)) / 2
        opt.zero_grad(); loss.backward(); opt.step()
    evaluate(f"epoch {ep+1} ({time.time()-t0:.0f}s, loss {loss.item():.3f})")
