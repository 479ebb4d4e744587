#!/usr/bin/env python3
"""Oracle check for COLT's scene view on ToolLens (numpy only).

Scores each test query as toolret's inductive COLT does with tool-layer weight 0 and
scene-layer weight 1, score = cos(e_q + normalize(e_s), e_t) + cos(e_q, e_t), but attaches the
query to its TRUE scene (from query_scene_test.txt) instead of soft edges: information that is
not available at test time. Uses the untrained stage-1 embeddings cached by `train colt`.

usage: python3 experiments/2026-11-23-colt-oracle-scene/oracle_scene.py RUN/embeddings-*.safetensors [DATA_DIR]
"""
import json, struct, sys
import numpy as np

emb = sys.argv[1]
D = (sys.argv[2] if len(sys.argv) > 2 else '../shared/datasets/toollens').rstrip('/') + '/'

def safetensors(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: np.frombuffer(b[8 + n + v['data_offsets'][0]:8 + n + v['data_offsets'][1]], dtype=np.float32).reshape(v['shape'])
            for k, v in h.items() if k != '__metadata__'}

def norm(x):
    return x / (np.linalg.norm(x, axis=-1, keepdims=True) + 1e-12)

E = safetensors(emb)
Q, T = norm(E['queries']), norm(E['tools'])
qix = {json.loads(l)['_id']: i for i, l in enumerate(open(D + 'queries.jsonl'))}
tix = {json.loads(l)['_id']: i for i, l in enumerate(open(D + 'corpus.jsonl'))}
rel = {}
for line in open(D + 'qrels/test.tsv').read().split('\n')[1:]:
    if line.strip():
        q, t, _ = line.split('\t')
        rel.setdefault(qix[q], []).append(tix[t])
scene = {qix[a]: int(b) for a, b in (l.split() for l in open(D + 'query_scene_test.txt'))}
ns = 1 + max(int(l.split()[0]) for l in open(D + 'scene_tool.txt'))
member = np.zeros((ns, len(T)))
for l in open(D + 'scene_tool.txt'):
    s, t = l.split()
    member[int(s), int(t)] = 1
S0 = (member / member.sum(1, keepdims=True).clip(1)) @ T  # scene = mean of its tools

def report(name, S, qs):
    order = np.argsort(-S, axis=1)
    out = []
    for k in (3, 5):
        r = n = c = 0.0
        for i, q in enumerate(qs):
            top, g = list(order[i, :k]), set(rel[q])
            hits = [1.0 if t in g else 0.0 for t in top]
            r += sum(hits) / len(g)
            n += sum(h / np.log2(j + 2) for j, h in enumerate(hits)) / sum(1 / np.log2(j + 2) for j in range(min(len(g), k)))
            c += all(t in top for t in g)
        out += [('R@%d' % k, r), ('N@%d' % k, n), ('C@%d' % k, c)]
    out = sorted(out, key=lambda x: (x[0][0] != 'R', x[0][0] != 'N', x[0]))
    print('%-28s' % name + '  '.join('%s %.2f' % (m, 100 * v / len(qs)) for m, v in out))

qs = sorted(rel)
Qt = Q[qs]
report('stage 1', Qt @ T.T, qs)
qS = norm(Qt + norm(S0[[scene[q] for q in qs]]))
report('oracle scene attachment', qS @ T.T + Qt @ T.T, qs)
