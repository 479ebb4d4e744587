#!/usr/bin/env python3
"""sentence-transformers reference embeddings for toolret's parity test.

Usage: st_embed.py MODEL IN.jsonl OUT.json

MODEL is a hub id (read from the Hugging Face hub cache; set HF_HUB_OFFLINE=1) or a directory.
IN.jsonl holds {"side": "query"|"tool", "text": ...} per line. OUT.json gets, per text and in
order, the token ids the model's tokenizer gives (truncated to max_seq_length) and the
embedding sentence-transformers computes: encode_query for queries, encode_document for tools
(each applies the model's "query"/"document" prompt when it has one), fp32 on CPU.
"""
import json
import sys

import torch
from sentence_transformers import SentenceTransformer


def main():
    model_ref, src, dst = sys.argv[1:4]
    torch.manual_seed(0)
    m = SentenceTransformer(model_ref, device="cpu")
    m.eval()
    rows = [json.loads(line) for line in open(src, encoding="utf-8") if line.strip()]
    out = [None] * len(rows)
    for side, fn, prompt in (("query", m.encode_query, "query"), ("tool", m.encode_document, "document")):
        idx = [i for i, r in enumerate(rows) if r["side"] == side]
        if not idx:
            continue
        texts = [rows[i]["text"] for i in idx]
        emb = fn(texts, batch_size=32, convert_to_numpy=True)
        p = m.prompts.get(prompt, "")
        tok = m.tokenizer([p + t for t in texts], truncation=True, max_length=m.max_seq_length)
        for j, i in enumerate(idx):
            out[i] = {"ids": tok["input_ids"][j], "embedding": emb[j].astype("float32").tolist()}
    json.dump({"model": model_ref, "max_seq_length": m.max_seq_length, "rows": out}, open(dst, "w"))


if __name__ == "__main__":
    main()
