#!/usr/bin/env python3
"""Fine-tunes a model with sentence-transformers exactly as a toolret bi-encoder run did, for
the side-by-side comparison (README "Pre-trained models").

Usage: st_finetune.py MODEL DATA_DIR TOOLRET_RUN OUT_DIR

Reads the toolret run's run.json: its flags (batch, lr, warm-up, epochs / max steps, weight
decay, clipping, temperature, query and tool lengths, seed) and the dev queries it
held out of the train split), builds the same (query, relevant tool) training pairs, and trains
with MultipleNegativesRankingLoss (scale 1/temperature; with the run's -mini-batch M,
CachedMultipleNegativesRankingLoss with mini_batch_size M, GradCache as toolret's) and the
no-duplicates batch sampler,
AdamW with linear warm-up and decay, fp32 on CPU (ST_DEVICE=cuda: on the GPU, with
ST_PRECISION=fp32|tf32|bf16). sentence-transformers has one
max_seq_length: the tool length (queries longer than the query length are counted and
reported). Saves the model to OUT_DIR/model, the test rankings to OUT_DIR/test.trec, and prints
the test metrics, wall time and peak RSS as one JSON object (also OUT_DIR/result.json).
"""
import json
import os
import resource
import sys
import time

import torch
from datasets import Dataset
from sentence_transformers import (SentenceTransformerTrainer,
                                   SentenceTransformerTrainingArguments)
from sentence_transformers.losses import CachedMultipleNegativesRankingLoss, MultipleNegativesRankingLoss
from sentence_transformers.training_args import BatchSamplers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from st_zeroshot import evaluate, load, load_beir  # noqa: E402


def flag(args, name, default):
    v = args.get(name)
    return type(default)(float(v)) if v not in (None, "") else default


def main():
    ref, ddir, run, out = sys.argv[1:5]
    meta = json.load(open(os.path.join(run, "run.json")))
    flags = meta["args"]
    dev = set(meta.get("split", {}).get("dev_query_ids") or [])
    batch = flag(flags, "batch", 32)
    lr = flag(flags, "lr", 2e-5)
    warmup = flag(flags, "warmup", 0.1)
    epochs = flag(flags, "epochs", 1)
    max_steps = flag(flags, "max-steps", 0)
    wd = flag(flags, "weight-decay", 0.01)
    clip = flag(flags, "clip", 1.0)
    temp = flag(flags, "temperature", 0.05)
    qlen = flag(flags, "query-len", 32)
    tlen = flag(flags, "tool-len", 64)
    seed = flag(flags, "seed", 1)
    mini = flag(flags, "mini-batch", 0)
    torch.manual_seed(seed)

    tools, queries, qids, rel = load_beir(ddir, "train")
    text = {str(t["_id"]): t["text"] for t in tools}
    pairs = [(queries[q], text[t]) for q in qids if q not in dev for t in sorted(rel[q], key=int)]
    device = os.environ.get("ST_DEVICE", "cpu")
    prec = os.environ.get("ST_PRECISION", "fp32")
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        torch.backends.cudnn.allow_tf32 = prec == "tf32"
    m = load(ref, device)
    m.max_seq_length = tlen
    long_q = sum(len(m.tokenizer(queries[q])["input_ids"]) > qlen for q in qids if q not in dev)
    ds = Dataset.from_dict({"anchor": [p[0] for p in pairs], "positive": [p[1] for p in pairs]})
    args = SentenceTransformerTrainingArguments(
        output_dir=os.path.join(out, "checkpoints"), num_train_epochs=epochs,
        max_steps=max_steps if max_steps > 0 else -1, per_device_train_batch_size=batch,
        learning_rate=lr, warmup_ratio=warmup, lr_scheduler_type="linear", weight_decay=wd,
        max_grad_norm=clip if clip > 0 else 1e9, seed=seed, data_seed=seed,
        batch_sampler=BatchSamplers.NO_DUPLICATES, save_strategy="no", logging_steps=20,
        report_to="none", use_cpu=device == "cpu", dataloader_drop_last=False,
        bf16=prec == "bf16")
    if mini > 0:
        loss = CachedMultipleNegativesRankingLoss(m, scale=1 / temp, mini_batch_size=mini)
    else:
        loss = MultipleNegativesRankingLoss(m, scale=1 / temp)
    start = time.time()
    SentenceTransformerTrainer(model=m, args=args, train_dataset=ds, loss=loss).train()
    wall = time.time() - start
    m.save(os.path.join(out, "model"))
    res = evaluate(m, ddir, "test", os.path.join(out, "test.trec"), "st-finetune")
    res.update({"loss": type(loss).__name__, "mini_batch": mini, "train_pairs": len(pairs), "queries_over_query_len": long_q, "train_seconds": round(wall, 1),
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "threads": torch.get_num_threads(), "torch": torch.__version__, "device": device, "precision": prec})
    if device == "cuda":
        res["gpu"] = torch.cuda.get_device_name(0)
        res["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    json.dump(res, open(os.path.join(out, "result.json"), "w"), indent=1, sort_keys=True)
    print(json.dumps(res, sort_keys=True))


if __name__ == "__main__":
    main()
