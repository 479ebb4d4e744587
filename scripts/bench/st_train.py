#!/usr/bin/env python3
"""sentence-transformers side of `toolret bench train -vs st`: times sentence-transformers' own
training step (SentenceTransformer with a randomly initialised BERT of the spec's sizes and mean
pooling, MultipleNegativesRankingLoss at scale 20 = temperature 0.05, in-batch negatives, AdamW,
gradient clipping at 1.0) on exactly the batches the Go side times, and its `encode` on the
spec's texts.

    ~/.cache/toolret/venv/bin/python scripts/bench/st_train.py SPEC.json

The spec (written by cmd/bench) holds the model sizes ("config"), the batch, the steps'
token lengths ("batches": each {"q": lengths, "t": lengths, "qpad": Lq, "tpad": Lt}), the
thread count, the vocab.txt path, and "encode": the texts to encode with their max length and
batch size. Each batch is padded the way sentence-transformers' tokenizer pads (to the batch's
longest text); the token ids are random (speed does not depend on them). Warm-up: one step,
then the timed steps. bf16 autocast is timed too (a second row) when the CPU has avx512_bf16
or amx_bf16, and with "bf16": "on".

Prints one JSON line: seconds and CPU seconds (all threads) of the timed steps, peak RSS (VmHWM), encode texts/s, torch.mm
fp32 peak, versions, and the bf16 figures or why they are absent.
"""
import json
import os
import sys
import tempfile
import time

spec = json.load(open(sys.argv[1]))
threads = spec.get("threads", 2)
os.environ.setdefault("OMP_NUM_THREADS", str(threads))
os.environ.setdefault("MKL_NUM_THREADS", str(threads))
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["HF_HUB_OFFLINE"] = "1"

import torch  # noqa: E402
import transformers  # noqa: E402
import sentence_transformers as st  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers.sentence_transformer import losses  # noqa: E402
from sentence_transformers.sentence_transformer.modules import Pooling, Transformer  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import mm_peak  # noqa: E402

torch.set_num_threads(threads)
torch.manual_seed(spec.get("seed", 1))
cfg = spec["config"]


def build_model(tmp):
    """A randomly initialised BERT of the spec's sizes, saved with a WordPiece tokenizer and
    loaded back through sentence-transformers' own Transformer + mean Pooling modules."""
    vocab = sum(1 for _ in open(spec["vocab"], encoding="utf-8"))
    bc = transformers.BertConfig(
        vocab_size=max(cfg["vocab_size"], vocab), hidden_size=cfg["hidden_size"], num_hidden_layers=cfg["num_hidden_layers"],
        num_attention_heads=cfg["num_attention_heads"], intermediate_size=cfg["intermediate_size"],
        max_position_embeddings=max(cfg["max_position_embeddings"], 512), hidden_act="gelu")
    transformers.BertModel(bc, add_pooling_layer=False).save_pretrained(tmp)
    transformers.BertTokenizerFast(vocab_file=spec["vocab"], do_lower_case=True).save_pretrained(tmp)
    tr = Transformer(tmp, max_seq_length=spec["tool_len"])
    return SentenceTransformer(modules=[tr, Pooling(cfg["hidden_size"], "mean")], device="cpu")


g = torch.Generator().manual_seed(spec.get("seed", 1))


def side(lens):
    """Features of one side, padded to the batch's longest text as the tokenizer pads."""
    pad = max(lens)
    ids = torch.zeros(len(lens), pad, dtype=torch.long)
    mask = torch.zeros(len(lens), pad, dtype=torch.long)
    for r, n in enumerate(lens):
        ids[r, :n] = torch.randint(1000, cfg["vocab_size"], (n,), generator=g)
        mask[r, :n] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


def time_train(model, batches, autocast):
    loss_fn = losses.MultipleNegativesRankingLoss(model, scale=20.0)
    params = [p for p in model.parameters() if p.requires_grad]
    try:
        opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, fused=True)
        fused = True
    except (RuntimeError, TypeError):
        opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01)
        fused = False
    model.train()
    labels = torch.arange(len(batches[0][0]["input_ids"]))

    def step(q, t):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            # the features are copied: the model's forward writes its outputs into the dict
            loss = loss_fn([dict(q), dict(t)], labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss.item()

    for _ in range(max(spec.get("warmup", 1), 1)):  # warm-up
        step(*batches[0])
    t0, c0 = time.perf_counter(), time.process_time()
    for b in batches:
        step(*b)
    return time.perf_counter() - t0, time.process_time() - c0, fused


def time_encode(model, enc):
    if not enc or not enc.get("texts"):
        return None
    model.eval()
    model.max_seq_length = enc["max_len"]
    texts, bs = enc["texts"], enc["batch"]
    with torch.inference_mode():
        model.encode(texts[:bs], batch_size=bs)  # warm-up
        t0 = time.perf_counter()
        model.encode(texts, batch_size=bs, convert_to_numpy=True)
        el = time.perf_counter() - t0
    return len(texts) / el


def peak_rss():
    """VmHWM, this process's peak RSS in bytes (not ru_maxrss: Linux carries that across the
    exec from the parent's address space, here the Go benchmark's)."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def bf16_capable():
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        flags = ""
    have = [f for f in ("avx512_bf16", "amx_bf16") if f" {f}" in flags]
    return have


with tempfile.TemporaryDirectory() as tmp:
    model = build_model(tmp)
    batches = [(side(b["q"]), side(b["t"])) for b in spec["batches"]]
    real = sum(sum(b["q"]) + sum(b["t"]) for b in spec["batches"])
    padded = sum(len(b["q"]) * max(b["q"]) + len(b["t"]) * max(b["t"]) for b in spec["batches"])
    seconds, cpu, fused = time_train(model, batches, False)
    rss_train = peak_rss()
    out = {"seconds": seconds, "cpu_seconds": cpu, "sec_per_step": seconds / len(batches), "tokens_per_sec": real / seconds,
           "padded_tokens": padded, "peak_rss": rss_train, "threads": torch.get_num_threads(),
           "torch": torch.__version__, "st": st.__version__, "transformers": transformers.__version__,
           "attn": getattr(model[0].auto_model.config, "_attn_implementation", "?"), "fused_adamw": fused,
           "blas": "mkl" if torch.backends.mkl.is_available() else "other"}
    out["encode_texts_per_sec"] = time_encode(model, spec.get("encode"))
    have = bf16_capable()
    if have or spec.get("bf16") == "on":
        bf, _, _ = time_train(model, batches, True)
        out["bf16_seconds"] = bf
        out["bf16_note"] = "CPU has " + ",".join(have) if have else "forced: CPU lacks avx512_bf16/amx_bf16"
    else:
        out["bf16_note"] = "absent: CPU has neither avx512_bf16 nor amx_bf16"
    out["mm_gflops"] = mm_peak(n=spec.get("mm_n", 1024))
    print(json.dumps(out))
