# Hubness correction probe on a held-out view's tool-carved dev split (docs/results/2026-11-29-general-holdout.md,
# "Seeds 2 and 3 selected ..."). Usage: python hub-probe.py BEIR_VIEW MODEL_DIR DEV_RUN.json LIBRARY_PREFIX
# (DEV_RUN.json: eval -data VIEW:1,toolmix:1 -method bm25 -first-stage RUN -split dev -save-run; the
# prefix is the view's library name in it, e.g. toollens-h1). Needs sentence-transformers.
import json, sys, collections, random, numpy as np, torch
from sentence_transformers import SentenceTransformer
torch.set_num_threads(1)
view, model_dir, devrun = sys.argv[1], sys.argv[2], sys.argv[3]
tools = {}
for l in open(f'{view}/corpus.jsonl'):
    j = json.loads(l); tools[j['_id']] = j['text']
qs = {json.loads(l)['_id']: json.loads(l)['text'] for l in open(f'{view}/queries.jsonl')}
qrels = collections.defaultdict(set)
for l in open(f'{view}/qrels/train.tsv'):
    p = l.split()
    if p[0] != 'query-id': qrels[p[0]].add(p[1])
dev = [k.split(':', 1)[1] for k in json.load(open(devrun)) if k.startswith(sys.argv[4] + ':')]
devset = set(dev)
ref = [q for q in qrels if q not in devset]
random.seed(1); ref = random.sample(ref, min(3000, len(ref)))
m = SentenceTransformer(model_dir, device='cpu'); m.max_seq_length = 256
ids = sorted(tools); T = m.encode([tools[i] for i in ids], batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
D = m.encode([qs[q] for q in dev], batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
R = m.encode([qs[q] for q in ref], batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
S = D @ T.T; SR = R @ T.T
def ev(S):
    r5 = n5 = 0
    for i, q in enumerate(dev):
        top = np.argsort(-S[i])[:5]; rel = qrels[q]
        hits = [ids[j] in rel for j in top]
        r5 += sum(hits) / len(rel)
        dcg = sum(h / np.log2(k + 2) for k, h in enumerate(hits)); idcg = sum(1 / np.log2(k + 2) for k in range(min(5, len(rel))))
        n5 += dcg / idcg
    return 100 * r5 / len(dev), 100 * n5 / len(dev)
print('dev queries', len(dev), 'ref', len(ref))
print('dense', ev(S))
for k in (10, 50):
    rt = np.sort(SR, axis=0)[-k:].mean(0)  # each tool's mean top-k similarity to the reference queries
    for lam in (0.25, 0.5, 0.75, 1.0):
        print('csls k', k, 'lam', lam, ev(S - lam * rt[None, :]))
mu = SR.mean(0)
for lam in (0.5, 1.0):
    print('mean-centre lam', lam, ev(S - lam * mu[None, :]))
