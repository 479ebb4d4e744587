#!/usr/bin/env python3
"""Checks an exported HF BERT directory with nothing but numpy and json.

    /usr/bin/python3 scripts/export/check_safetensors.py DIR

Reads DIR/model.safetensors (header and data) and DIR/config.json and checks that every
tensor HF's BertModel (or BertForSequenceClassification) expects is there with the shape
config.json implies, that the data section is fully covered by the tensors, that values are
finite float32, and that the tokenizer files agree with vocab_size. Prints a summary; exits
1 with the problems found.
"""
import json
import os
import struct
import sys

import numpy as np


def expected(cfg, prefix, has_pooler, labels):
    h, i, n_layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    e = {
        "embeddings.word_embeddings.weight": [cfg["vocab_size"], h],
        "embeddings.position_embeddings.weight": [cfg["max_position_embeddings"], h],
        "embeddings.token_type_embeddings.weight": [cfg["type_vocab_size"], h],
        "embeddings.LayerNorm.weight": [h],
        "embeddings.LayerNorm.bias": [h],
    }
    for l in range(n_layers):
        p = "encoder.layer.%d." % l
        for m in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            e[p + m + ".weight"] = [h, h]
            e[p + m + ".bias"] = [h]
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            e[p + ln + ".weight"] = [h]
            e[p + ln + ".bias"] = [h]
        e[p + "intermediate.dense.weight"] = [i, h]
        e[p + "intermediate.dense.bias"] = [i]
        e[p + "output.dense.weight"] = [h, i]
        e[p + "output.dense.bias"] = [h]
    if has_pooler:
        e["pooler.dense.weight"] = [h, h]
        e["pooler.dense.bias"] = [h]
    out = {prefix + k: v for k, v in e.items()}
    if labels:
        out["classifier.weight"] = [labels, h]
        out["classifier.bias"] = [labels]
    return out


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    data = raw[8 + n:]
    return header, data


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    d = argv[1]
    problems = []
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    header, data = read_safetensors(os.path.join(d, "model.safetensors"))
    arch = cfg.get("architectures") or ["BertModel"]
    labels = len(cfg.get("id2label", {})) if "BertForSequenceClassification" in arch else 0
    prefix = "bert." if any(k.startswith("bert.") for k in header) else ""
    has_pooler = (prefix + "pooler.dense.weight") in header
    want = expected(cfg, prefix, has_pooler, labels)
    spans = []
    for name, shape in sorted(want.items()):
        info = header.get(name)
        if info is None:
            problems.append("missing tensor %s" % name)
            continue
        if info["dtype"] != "F32":
            problems.append("%s: dtype %s, want F32" % (name, info["dtype"]))
        if info["shape"] != shape:
            problems.append("%s: shape %s, config.json implies %s" % (name, info["shape"], shape))
        b, e = info["data_offsets"]
        if e - b != 4 * int(np.prod(shape)):
            problems.append("%s: %d bytes for shape %s" % (name, e - b, shape))
            continue
        arr = np.frombuffer(data[b:e], dtype="<f4").reshape(shape)
        if not np.all(np.isfinite(arr)):
            problems.append("%s: non-finite values" % name)
        spans.append((b, e))
    extra = sorted(set(header) - set(want))
    if extra:
        problems.append("unexpected tensors: %s" % ", ".join(extra))
    spans.sort()
    pos = 0
    for b, e in spans:
        if b != pos:
            problems.append("data section gap or overlap at byte %d" % pos)
        pos = e
    if pos != len(data) and not extra:
        problems.append("data section has %d bytes, tensors cover %d" % (len(data), pos))
    vocab = os.path.join(d, "vocab.txt")
    if os.path.exists(vocab):
        with open(vocab, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n != cfg["vocab_size"]:
            problems.append("vocab.txt has %d tokens, vocab_size is %d" % (n, cfg["vocab_size"]))
    tj = os.path.join(d, "tokenizer.json")
    if os.path.exists(tj):
        with open(tj, encoding="utf-8") as f:
            t = json.load(f)
        if len(t["model"]["vocab"]) != cfg["vocab_size"]:
            problems.append("tokenizer.json has %d tokens, vocab_size is %d" % (len(t["model"]["vocab"]), cfg["vocab_size"]))
    if problems:
        for p in problems:
            print("check_safetensors: %s: %s" % (d, p), file=sys.stderr)
        return 1
    print("ok: %d tensors, %d parameters, architectures %s, pooler %s, labels %d" % (
        len(want), sum(int(np.prod(s)) for s in want.values()), arch, has_pooler, labels))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
