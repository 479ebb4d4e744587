#!/usr/bin/env python3
"""PyTorch side of `go run ./cmd/toolret bench encode`: times a BERT forward pass (HF BertModel
semantics, as in scripts/parity/make_bert_fixture.py) over the exact padded batches the Go
benchmark wrote, with random weights of the same configuration, on CPU.

    env -u OPENBLAS_CORETYPE /usr/bin/python3 scripts/bench/torch_encode.py BATCHES.json
    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 scripts/bench/torch_encode.py BATCHES.json   # kernels forced (bench -torch-blas)

Prints one JSON line: {"texts_per_sec": ..., "seconds": ..., "threads": ..., "mm_gflops": ...}
(mm_gflops: the fp32 matmul peak torch.mm reaches on 1024x1024 matrices, best thread count).
"""
import json, math, os, sys, time
import torch

from benchlib import blas_core, mm_peak

spec = json.load(open(sys.argv[1]))
cfg = spec["config"]
H, I, L, NH = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
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

    def forward(self, ids, mask):
        B, S = ids.shape
        x = self.ln(self.word(ids) + self.pos.weight[:S][None] + self.typ.weight[0])
        ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        dh = H // NH
        for m in self.layers:
            q, k, v = (t(x).view(B, S, NH, dh).transpose(1, 2) for t in (m.q, m.k, m.v))
            p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh) + ext, -1)
            c = (p @ v).transpose(1, 2).reshape(B, S, H)
            x = m.ln1(m.o(c) + x)
            x = m.ln2(m.out(torch.nn.functional.gelu(m.i(x))) + x)
        mf = mask[..., None].float()
        return (x * mf).sum(1) / mf.sum(1)

model = Bert().eval()
batches = [(torch.tensor(b["ids"]), torch.tensor(b["mask"])) for b in spec["batches"]]
n = sum(len(b[0]) for b in batches)
results, mm = [], 0.0
with torch.no_grad():
    # PyTorch's best thread count varies with the BLAS build: measure 1 and all cores.
    for threads in sorted({1, os.cpu_count()}):
        torch.set_num_threads(threads)
        for ids, mask in batches[:3]:  # warm-up
            model(ids, mask)
        best = float("inf")
        for _ in range(spec.get("repeats", 3)):
            t0 = time.perf_counter()
            for ids, mask in batches:
                model(ids, mask)
            best = min(best, time.perf_counter() - t0)
        results.append((best, threads))
        mm = max(mm, mm_peak())
best, threads = min(results)
print(json.dumps({"texts_per_sec": n / best, "seconds": best, "texts": n, "threads": threads,
                  "all": {str(t): n / b for b, t in results}, "mm_gflops": mm, "torch": torch.__version__, "blas_core": blas_core()}))
