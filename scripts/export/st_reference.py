#!/usr/bin/env python3
"""Encodes texts with an exported bi-encoder directory the way sentence-transformers does.

sentence-transformers is not installed here, so this is a re-implementation of what
`SentenceTransformer(DIR).encode(texts)` runs, with PyTorch and numpy only
(apt-get install python3-torch):

    env -u OPENBLAS_CORETYPE /usr/bin/python3 scripts/export/st_reference.py DIR REQUEST.json

REQUEST.json is {"texts": [...], "max_seq_length": N (optional), "batch_size": B (optional)}:
max_seq_length does what `model.max_seq_length = N` does before encode. Prints
{"embeddings": [[...], ...], "max_seq_length": N} on stdout.

What is read, as sentence-transformers reads it:
  modules.json                 the module list, in order; supported types: models.Transformer,
                               models.Pooling, models.Dense, models.Normalize
  sentence_bert_config.json    max_seq_length and do_lower_case of the Transformer module
  config.json                  the HF BertConfig (hidden_act, layer_norm_eps, sizes)
  model.safetensors / pytorch_model.bin   BertModel weights ("bert." prefix accepted)
  tokenizer.json (else vocab.txt + tokenizer_config.json)   the BERT WordPiece tokenizer:
                               BertNormalizer, BertPreTokenizer, WordPiece, [CLS] ... [SEP]
                               truncated to max_seq_length tokens, padded per batch
  1_Pooling/config.json        cls, mean, max, mean_sqrt_len_tokens pooling
  N_Dense/config.json + weights   Linear(in, out, bias) and its activation (Tanh, Identity)
  N_Normalize                  L2 normalisation
The BERT forward is HF's BertModel in eval mode: embeddings (word + position + token type)
-> LayerNorm -> post-LN layers with the additive attention mask (1 - mask) * finfo.min.
"""
import json
import math
import os
import struct
import sys
import unicodedata

import numpy as np
import torch

ST = "sentence_transformers.models."


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_safetensors(path):
    """Returns {name: float32 tensor}: 8-byte little-endian header size, JSON header, data."""
    dtypes = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        if t["dtype"] == "BF16":
            raw = np.frombuffer(data[a:b], dtype=np.uint16).astype(np.uint32) << 16
            arr = raw.view(np.float32)
        else:
            arr = np.frombuffer(data[a:b], dtype=dtypes[t["dtype"]])
        out[name] = torch.from_numpy(arr.astype(np.float32).reshape(t["shape"]).copy())
    return out


def read_weights(d):
    p = os.path.join(d, "model.safetensors")
    if os.path.exists(p):
        return read_safetensors(p)
    p = os.path.join(d, "pytorch_model.bin")
    if os.path.exists(p):
        return {k: v.float() for k, v in torch.load(p, map_location="cpu").items()}
    raise SystemExit("%s: no model.safetensors or pytorch_model.bin" % d)


# --- tokenizer: HF's BERT tokenizer (tokenizers' BertNormalizer, BertPreTokenizer, WordPiece) ---

def is_control(c):
    if c in "\t\n\r":
        return False
    return unicodedata.category(c) in ("Cc", "Cf")


def is_whitespace(c):
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def is_chinese(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def is_punct(c):
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


class WordPiece:
    def __init__(self, d):
        p = os.path.join(d, "tokenizer.json")
        if os.path.exists(p):
            tj = read_json(p)
            norm, model = tj.get("normalizer") or {}, tj["model"]
            if model.get("type") != "WordPiece":
                raise SystemExit("%s: model type %s, want WordPiece" % (p, model.get("type")))
            self.vocab = model["vocab"]
            self.unk = model.get("unk_token", "[UNK]")
            self.prefix = model.get("continuing_subword_prefix", "##")
            self.max_chars = model.get("max_input_chars_per_word", 100)
            self.clean = norm.get("clean_text", True)
            self.chinese = norm.get("handle_chinese_chars", True)
            self.lower = norm.get("lowercase", True)
            self.strip = norm.get("strip_accents")
        else:
            with open(os.path.join(d, "vocab.txt"), encoding="utf-8") as f:
                self.vocab = {w.rstrip("\n"): i for i, w in enumerate(f)}
            tc = read_json(os.path.join(d, "tokenizer_config.json"))
            self.unk, self.prefix, self.max_chars, self.clean = "[UNK]", "##", 100, True
            self.chinese = tc.get("tokenize_chinese_chars", True)
            self.lower = tc.get("do_lower_case", True)
            self.strip = tc.get("strip_accents")
        if self.strip is None:
            self.strip = self.lower
        self.cls, self.sep, self.pad = self.vocab["[CLS]"], self.vocab["[SEP]"], self.vocab["[PAD]"]

    def normalize(self, text):
        if self.clean:
            text = "".join(" " if is_whitespace(c) else c for c in text
                           if not (ord(c) == 0 or ord(c) == 0xFFFD or is_control(c)))
        if self.chinese:
            text = "".join(" %s " % c if is_chinese(ord(c)) else c for c in text)
        if self.strip:
            text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        if self.lower:
            text = text.lower()
        return text

    def words(self, text):
        out, cur = [], ""
        for c in text:
            if c.isspace():
                if cur:
                    out.append(cur)
                cur = ""
            elif is_punct(c):
                if cur:
                    out.append(cur)
                out.append(c)
                cur = ""
            else:
                cur += c
        if cur:
            out.append(cur)
        return out

    def pieces(self, word):
        if len(word) > self.max_chars:
            return [self.vocab[self.unk]]
        out, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                sub = word[start:end]
                if start > 0:
                    sub = self.prefix + sub
                if sub in self.vocab:
                    found = self.vocab[sub]
                    break
                end -= 1
            if found is None:
                return [self.vocab[self.unk]]
            out.append(found)
            start = end
        return out

    def encode(self, text, max_len):
        ids = []
        for w in self.words(self.normalize(text)):
            ids.extend(self.pieces(w))
        return [self.cls] + ids[:max_len - 2] + [self.sep]


# --- BertModel ---

ACTS = {
    "gelu": lambda x: torch.nn.functional.gelu(x),
    "gelu_new": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "relu": torch.relu,
    "silu": torch.nn.functional.silu,
    "swish": torch.nn.functional.silu,
    "tanh": torch.tanh,
}


class Bert:
    def __init__(self, d):
        self.cfg = read_json(os.path.join(d, "config.json"))
        w = read_weights(d)
        self.w = {}
        for k, v in w.items():
            k = k[len("bert."):] if k.startswith("bert.") else k
            k = k.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
            self.w[k] = v
        self.act = ACTS[self.cfg.get("hidden_act", "gelu")]

    def linear(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def ln(self, x, name):
        h = self.cfg["hidden_size"]
        return torch.nn.functional.layer_norm(x, (h,), self.w[name + ".weight"], self.w[name + ".bias"],
                                              self.cfg.get("layer_norm_eps", 1e-12))

    def __call__(self, ids, types, mask):
        c, w = self.cfg, self.w
        B, S = ids.shape
        H, NH = c["hidden_size"], c["num_attention_heads"]
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:S][None] \
            + w["embeddings.token_type_embeddings.weight"][types]
        x = self.ln(x, "embeddings.LayerNorm")
        ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        dh = H // NH
        for l in range(c["num_hidden_layers"]):
            p = "encoder.layer.%d." % l

            def heads(t):
                return t.view(B, S, NH, dh).permute(0, 2, 1, 3)
            q, k, v = (heads(self.linear(x, p + "attention.self." + n)) for n in ("query", "key", "value"))
            probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh) + ext, dim=-1)
            ctx = (probs @ v).permute(0, 2, 1, 3).reshape(B, S, H)
            x = self.ln(self.linear(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            inter = self.act(self.linear(x, p + "intermediate.dense"))
            x = self.ln(self.linear(inter, p + "output.dense") + x, p + "output.LayerNorm")
        return x


# --- the sentence-transformers module pipeline ---

def pooling(cfg, hidden, mask):
    m = mask[..., None].float()
    outs = []
    if cfg.get("pooling_mode_cls_token"):
        outs.append(hidden[:, 0])
    if cfg.get("pooling_mode_max_tokens"):
        outs.append(hidden.masked_fill(m == 0, -1e9).max(1).values)
    if cfg.get("pooling_mode_mean_tokens") or cfg.get("pooling_mode_mean_sqrt_len_tokens"):
        s, n = (hidden * m).sum(1), m.sum(1).clamp(min=1e-9)
        if cfg.get("pooling_mode_mean_tokens"):
            outs.append(s / n)
        if cfg.get("pooling_mode_mean_sqrt_len_tokens"):
            outs.append(s / n.sqrt())
    for k in ("pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"):
        if cfg.get(k):
            raise SystemExit("pooling mode %s not implemented here" % k)
    if not outs:
        raise SystemExit("no pooling mode set")
    return torch.cat(outs, 1)


def dense_module(path):
    cfg = read_json(os.path.join(path, "config.json"))
    w = read_weights(path)
    act = cfg.get("activation_function", "torch.nn.modules.linear.Identity").rsplit(".", 1)[-1]
    acts = {"Tanh": torch.tanh, "Identity": lambda x: x, "ReLU": torch.relu, "Sigmoid": torch.sigmoid}
    if act not in acts:
        raise SystemExit("%s: activation %s not implemented here" % (path, act))
    f = acts[act]

    def run(x):
        y = x @ w["linear.weight"].T
        if cfg.get("bias", True):
            y = y + w["linear.bias"]
        return f(y)
    return run


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    d, req = sys.argv[1], read_json(sys.argv[2])
    torch.set_num_threads(1)
    mods = read_json(os.path.join(d, "modules.json"))
    sb = read_json(os.path.join(d, "sentence_bert_config.json"))
    max_len = req.get("max_seq_length") or sb.get("max_seq_length")
    cfg = read_json(os.path.join(d, "config.json"))
    max_len = min(max_len or cfg["max_position_embeddings"], cfg["max_position_embeddings"])
    tok, bert = WordPiece(d), Bert(d)
    steps = []
    for m in mods:
        typ, path = m["type"], os.path.join(d, m["path"])
        if typ == ST + "Transformer":
            if m["path"] not in ("", "."):
                raise SystemExit("Transformer module in a subdirectory: not implemented here")
            steps.append(("transformer", None))
        elif typ == ST + "Pooling":
            steps.append(("pooling", read_json(os.path.join(path, "config.json"))))
        elif typ == ST + "Dense":
            steps.append(("dense", dense_module(path)))
        elif typ == ST + "Normalize":
            steps.append(("normalize", None))
        else:
            raise SystemExit("module %s not implemented here" % typ)
    texts = req["texts"]
    if sb.get("do_lower_case"):
        texts = [t.lower() for t in texts]
    bs = req.get("batch_size", 32)
    out = []
    with torch.no_grad():
        for start in range(0, len(texts), bs):
            seqs = [tok.encode(t, max_len) for t in texts[start:start + bs]]
            S = max(len(s) for s in seqs)
            ids = torch.full((len(seqs), S), tok.pad, dtype=torch.long)
            mask = torch.zeros((len(seqs), S), dtype=torch.long)
            for i, s in enumerate(seqs):
                ids[i, :len(s)] = torch.tensor(s)
                mask[i, :len(s)] = 1
            x = None
            for kind, arg in steps:
                if kind == "transformer":
                    x = bert(ids, torch.zeros_like(ids), mask)
                elif kind == "pooling":
                    x = pooling(arg, x, mask)
                elif kind == "dense":
                    x = arg(x)
                else:
                    x = torch.nn.functional.normalize(x, p=2, dim=1)
            out.extend(x.tolist())
    json.dump({"embeddings": out, "max_seq_length": max_len}, sys.stdout)


if __name__ == "__main__":
    main()
