#!/usr/bin/env python3
"""sentence-transformers side of the GPU training bench (scripts/gpu/device.sh).

Usage: st_bench.py DATA_DIR VOCAB SHAPES BATCHES STEPS PRECISIONS [PAD_MULTIPLE]
(SHAPES, BATCHES, PRECISIONS comma-separated: every combination, in one process)

Times sentence-transformers' own training step (its Transformer + mean Pooling modules and
MultipleNegativesRankingLoss, scale 20, AdamW lr 1e-4) on a randomly initialised BERT of SHAPE
(minilm 6/384, bge-small 12/384, bert-base 12/768) on the GPU, over batches drawn as
`toolret bench train -lengths toollens` draws them: each row's token length is a ToolLens
query's (tool's) word-piece length + 2, capped at 32 (128), random token ids, each batch
padded to its longest row rounded up to PAD_MULTIPLE (32). PRECISION: fp32 (TF32 off), tf32
(matmuls in TF32, as XLA's default precision does), bf16 (autocast). 3 warm-up steps, then
STEPS timed steps between CUDA synchronisations. Prints one JSON line: real tokens/s, seconds
per step, peak GPU memory; one line per combination.
"""
import json, math, os, random, sys, tempfile, time

import torch
from sentence_transformers import SentenceTransformer, losses, models
from transformers import BertConfig, BertModel, BertTokenizerFast

SHAPES = {"minilm": (6, 384, 12, 1536), "bge-small": (12, 384, 12, 1536), "bert-base": (12, 768, 12, 3072)}


def lengths(data, vocab, qmax, tmax):
    tok = BertTokenizerFast(vocab_file=vocab, do_lower_case=True)
    qs = [json.loads(l)["text"] for l in open(os.path.join(data, "queries.jsonl"))]
    ts = [json.loads(l)["text"] for l in open(os.path.join(data, "corpus.jsonl"))]
    ql = [min(len(x) + 2, qmax) for x in tok(qs, add_special_tokens=False)["input_ids"]]
    tl = [min(len(x) + 2, tmax) for x in tok(ts, add_special_tokens=False)["input_ids"]]
    return ql, tl


def batch(rng, lens, b, pad, vocab_size, dev):
    rows = [rng.choice(lens) for _ in range(b)]
    width = min(max(rows), max(lens)) if pad <= 0 else int(math.ceil(max(rows) / pad) * pad)
    ids = torch.zeros(b, width, dtype=torch.long)
    mask = torch.zeros(b, width, dtype=torch.long)
    for i, n in enumerate(rows):
        ids[i, :n] = torch.randint(1000, vocab_size, (n,))
        mask[i, :n] = 1
    return {"input_ids": ids.to(dev), "attention_mask": mask.to(dev),
            "token_type_ids": torch.zeros_like(ids).to(dev)}, sum(rows)


def sync(dev):
    if dev == "cuda":
        torch.cuda.synchronize()


def run(data, vocab, shape, b, steps, prec, pad, ql, tl):
    L, H, NH, I = SHAPES[shape]
    torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
    torch.backends.cudnn.allow_tf32 = prec == "tf32"
    dev = os.environ.get("ST_BENCH_DEVICE", "cuda")  # cpu: a quick check of this script
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as d:
        cfg = BertConfig(vocab_size=30522, hidden_size=H, num_hidden_layers=L, num_attention_heads=NH,
                         intermediate_size=I, max_position_embeddings=512)
        BertModel(cfg).save_pretrained(d)
        BertTokenizerFast(vocab_file=vocab, do_lower_case=True).save_pretrained(d)
        word = models.Transformer(d, max_seq_length=128)
    m = SentenceTransformer(modules=[word, models.Pooling(H, "mean")], device=dev)
    m.train()
    loss = losses.MultipleNegativesRankingLoss(m, scale=20.0)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.01)
    rng = random.Random(1)
    plan = [(batch(rng, ql, b, pad, 30522, dev), batch(rng, tl, b, pad, 30522, dev)) for _ in range(steps + 3)]

    def step(q, t):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=prec == "bf16"):
            out = loss([q, t], None)
        out.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        return out

    for (q, _), (t, _) in plan[:3]:
        step(q, t)
    sync(dev)
    dev == "cuda" and torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    real = 0
    for (q, nq), (t, nt) in plan[3:]:
        step(q, t)
        real += nq + nt
    sync(dev)
    sec = time.perf_counter() - start
    print(json.dumps({"system": "sentence-transformers", "shape": shape, "batch": b, "precision": prec,
                      "steps": steps, "tokens_per_s": round(real / sec), "s_per_step": round(sec / steps, 5),
                      "peak_gpu_mib": round(torch.cuda.max_memory_allocated() / 2**20) if dev == "cuda" else None,
                      "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu"}), flush=True)
    del m, loss, opt, plan
    if dev == "cuda":
        torch.cuda.empty_cache()


def main():
    data, vocab, shapes, batches, steps, precs = sys.argv[1:7]
    pad = int(sys.argv[7]) if len(sys.argv) > 7 else 32
    ql, tl = lengths(data, vocab, 32, 128)
    for shape in shapes.split(","):
        for b in batches.split(","):
            for prec in precs.split(","):
                run(data, vocab, shape, int(b), int(steps), prec, pad, ql, tl)


if __name__ == "__main__":
    main()
