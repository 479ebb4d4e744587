#!/usr/bin/env python3
"""PyTorch side of `go run ./cmd/toolret bench train`: times bi-encoder training steps (shared BERT
tower, mean pooling, cosine InfoNCE with in-batch negatives, AdamW) on the same shapes as the
Go benchmark: batch B queries and B tools, random token ids; with "batches" in the spec
(each {"q": lengths, "t": lengths, "qpad": Lq, "tpad": Lt}: the rows' real lengths and the
padded lengths, one entry per timed step) exactly those batches, else B x Lq and B x Lt
full-length batches, "steps" of them.

    env -u OPENBLAS_CORETYPE /usr/bin/python3 scripts/bench/torch_train.py SPEC.json
    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 scripts/bench/torch_train.py SPEC.json   # kernels forced (bench -torch-blas)

Prints one JSON line: tokens/s and seconds of all the steps (best over 1 and all threads),
and the fp32 matmul peak torch.mm reaches on 1024x1024 matrices (GFLOP/s, best thread count).
"""
import json, math, os, sys, time
import torch

from benchlib import blas_core, mm_peak

spec = json.load(open(sys.argv[1]))
cfg = spec["config"]
H, I, L, NH = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
B, Lq, Lt, steps = spec["batch"], spec["query_len"], spec["tool_len"], spec["steps"]
torch.manual_seed(0)

class Bert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.word = torch.nn.Embedding(cfg["vocab_size"], H)
        self.pos = torch.nn.Embedding(cfg["max_position_embeddings"], H)
        self.typ = torch.nn.Embedding(2, H)
        self.ln = torch.nn.LayerNorm(H, eps=1e-12)
        self.layers = torch.nn.ModuleList()
        for _ in range(L):
            m = torch.nn.Module()
            m.q, m.k, m.v, m.o = (torch.nn.Linear(H, H) for _ in range(4))
            m.ln1, m.ln2 = torch.nn.LayerNorm(H, eps=1e-12), torch.nn.LayerNorm(H, eps=1e-12)
            m.i, m.out = torch.nn.Linear(H, I), torch.nn.Linear(I, H)
            self.layers.append(m)
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, ids, mask):
        Bn, S = ids.shape
        x = self.drop(self.ln(self.word(ids) + self.pos.weight[:S][None] + self.typ.weight[0]))
        ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        dh = H // NH
        for m in self.layers:
            q, k, v = (t(x).view(Bn, S, NH, dh).transpose(1, 2) for t in (m.q, m.k, m.v))
            p = self.drop(torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh) + ext, -1))
            c = (p @ v).transpose(1, 2).reshape(Bn, S, H)
            x = m.ln1(self.drop(m.o(c)) + x)
            x = m.ln2(self.drop(m.out(torch.nn.functional.gelu(m.i(x)))) + x)
        mf = mask[..., None].float()
        return torch.nn.functional.normalize((x * mf).sum(1) / mf.sum(1), dim=-1)

model = Bert().train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
g = torch.Generator().manual_seed(spec.get("seed", 1))

def side(lens, pad):
    ids = torch.zeros(B, pad, dtype=torch.long)
    mask = torch.zeros(B, pad, dtype=torch.long)
    for r, n in enumerate(lens):
        ids[r, :n] = torch.randint(1000, cfg["vocab_size"], (n,), generator=g)
        mask[r, :n] = 1
    return ids, mask

specs = spec.get("batches") or [{"q": [Lq] * B, "t": [Lt] * B, "qpad": Lq, "tpad": Lt}] * steps
batches = [side(b["q"], b["qpad"]) + side(b["t"], b["tpad"]) for b in specs]
real = sum(sum(b["q"]) + sum(b["t"]) for b in specs)

def step(qi, qm, ti, tm):
    opt.zero_grad()
    logits = model(qi, qm) @ model(ti, tm).T / 0.05
    loss = torch.nn.functional.cross_entropy(logits, torch.arange(B))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()

results, mm = [], 0.0
for threads in sorted({1, os.cpu_count()}):
    torch.set_num_threads(threads)
    seen = set()
    for b, s in zip(batches, specs):  # warm-up: every shape once, then 2 steps
        if (s["qpad"], s["tpad"]) not in seen:
            seen.add((s["qpad"], s["tpad"]))
            step(*b)
    for _ in range(2):
        step(*batches[0])
    t0 = time.perf_counter()
    for b in batches:
        step(*b)
    el = time.perf_counter() - t0
    results.append((real / el, threads, el))
    mm = max(mm, mm_peak())
tps, threads, el = max(results)
print(json.dumps({"tokens_per_sec": tps, "seconds": el, "sec_per_step": el / len(batches), "threads": threads,
                  "mm_gflops": mm, "torch": torch.__version__, "blas_core": blas_core(), "all": {str(t): x for x, t, _ in results}}))
