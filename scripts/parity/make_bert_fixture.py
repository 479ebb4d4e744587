#!/usr/bin/env python3
"""Writes models/bert/testdata/: a tiny random BERT in HF layout and PyTorch reference outputs.

The reference is written from HF BertModel semantics in plain torch (transformers is not
available here): embeddings (word + position + token type) -> LayerNorm -> N post-LN layers
(self-attention with the additive mask (1 - mask) * finfo.min, dense, residual, LayerNorm,
intermediate with exact erf GELU, output dense, residual, LayerNorm) -> pooler (dense + tanh).

Run with Debian's PyTorch (apt-get install python3-torch libopenblas0-pthread):
    env -u OPENBLAS_CORETYPE /usr/bin/python3 scripts/parity/make_bert_fixture.py

To keep the committed fixture small (the 30,522 x 64 word embedding matrix alone is 7.8 MB in
F32), the word embeddings are stored as F16 and only the rows of ids < 1000 and of the ids the
fixture batch uses are random: the other rows are zero (they cannot affect the outputs), and
the checkpoint is committed gzipped (tiny/model.safetensors.gz, ~0.5 MB; the Go test gunzips
it into a temporary HF directory). The reference uses exactly the stored F16 values. The
position embeddings are stored as BF16 (again, the reference uses the rounded values). The
checkpoint uses the "bert." prefix and the old gamma/beta names for the embeddings LayerNorm:
together this exercises F16, BF16, prefix and legacy-name loading; the plain F32 layout without
prefix is what toolret's own SaveHF writes and is tested by round trips in Go.
"""
import gzip, json, math, os, struct
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "models", "bert", "testdata")
VOCAB = os.path.join(ROOT, "..", "shared", "vocab", "bert-base-uncased-vocab.txt")

torch.manual_seed(20261122)
vocab_size = sum(1 for _ in open(VOCAB, encoding="utf-8"))
cfg = dict(vocab_size=vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
           intermediate_size=128, hidden_act="gelu", hidden_dropout_prob=0.1,
           attention_probs_dropout_prob=0.1, max_position_embeddings=64, type_vocab_size=2,
           initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0, model_type="bert",
           architectures=["BertModel"])
H, I, L, NH = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]

def rnd(*shape, std=0.5):
    # Larger than initializer_range so that every layer matters numerically.
    return torch.randn(*shape, dtype=torch.float32) * std

W = {}
W["embeddings.word_embeddings.weight"] = rnd(vocab_size, H).half().float()  # rows zeroed below
W["embeddings.position_embeddings.weight"] = rnd(cfg["max_position_embeddings"], H).bfloat16().float()
W["embeddings.token_type_embeddings.weight"] = rnd(2, H)
W["embeddings.LayerNorm.weight"] = 1 + rnd(H, std=0.1)
W["embeddings.LayerNorm.bias"] = rnd(H, std=0.1)
for l in range(L):
    p = f"encoder.layer.{l}."
    for m in ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"]:
        W[p + m + ".weight"] = rnd(H, H, std=1 / math.sqrt(H))
        W[p + m + ".bias"] = rnd(H, std=0.1)
    W[p + "attention.output.LayerNorm.weight"] = 1 + rnd(H, std=0.1)
    W[p + "attention.output.LayerNorm.bias"] = rnd(H, std=0.1)
    W[p + "intermediate.dense.weight"] = rnd(I, H, std=1 / math.sqrt(H))
    W[p + "intermediate.dense.bias"] = rnd(I, std=0.1)
    W[p + "output.dense.weight"] = rnd(H, I, std=1 / math.sqrt(I))
    W[p + "output.dense.bias"] = rnd(H, std=0.1)
    W[p + "output.LayerNorm.weight"] = 1 + rnd(H, std=0.1)
    W[p + "output.LayerNorm.bias"] = rnd(H, std=0.1)
W["pooler.dense.weight"] = rnd(H, H, std=1 / math.sqrt(H))
W["pooler.dense.bias"] = rnd(H, std=0.1)

def ln(x, w, b):
    return torch.nn.functional.layer_norm(x, (H,), w, b, cfg["layer_norm_eps"])

def linear(x, name):
    return x @ W[name + ".weight"].T + W[name + ".bias"]

def bert(ids, types, mask):
    B, S = ids.shape
    x = W["embeddings.word_embeddings.weight"][ids] + W["embeddings.position_embeddings.weight"][:S][None] \
        + W["embeddings.token_type_embeddings.weight"][types]
    x = ln(x, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"])
    ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    dh = H // NH
    for l in range(L):
        p = f"encoder.layer.{l}."
        def heads(t):
            return t.view(B, S, NH, dh).permute(0, 2, 1, 3)
        q, k, v = (heads(linear(x, p + "attention.self." + n)) for n in ("query", "key", "value"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh) + ext
        probs = torch.softmax(scores, dim=-1)
        ctx = (probs @ v).permute(0, 2, 1, 3).reshape(B, S, H)
        a = linear(ctx, p + "attention.output.dense")
        x = ln(a + x, W[p + "attention.output.LayerNorm.weight"], W[p + "attention.output.LayerNorm.bias"])
        inter = torch.nn.functional.gelu(linear(x, p + "intermediate.dense"))  # exact erf GELU
        o = linear(inter, p + "output.dense")
        x = ln(o + x, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"])
    return x

lengths = [9, 5, 12]
S = max(lengths)
g = torch.Generator().manual_seed(7)
ids = torch.zeros(len(lengths), S, dtype=torch.long)
types = torch.zeros_like(ids)
mask = torch.zeros_like(ids)
for i, n in enumerate(lengths):
    body = torch.randint(1000, vocab_size, (n - 2,), generator=g)
    ids[i, :n] = torch.cat([torch.tensor([101]), body, torch.tensor([102])])
    mask[i, :n] = 1
types[2, 6:12] = 1  # a pair: second segment has token type 1
keep = torch.zeros(vocab_size, dtype=torch.bool)
keep[:1000] = True
keep[ids.reshape(-1)] = True
W["embeddings.word_embeddings.weight"][~keep] = 0

with torch.no_grad():
    hidden = bert(ids, types, mask)
    cls = hidden[:, 0]
    m = mask[..., None].float()
    mean = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    pooler = torch.tanh(linear(cls, "pooler.dense"))

def write_safetensors(path, tensors):
    """A minimal safetensors writer: 8-byte little-endian header size, JSON header, data."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (dtype, t) in tensors.items():
        data = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    hb = json.dumps(header).encode()
    hb += b" " * (-len(hb) % 8)
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)

os.makedirs(os.path.join(OUT, "tiny"), exist_ok=True)
ckpt = {}
for name, t in W.items():
    out = "bert." + name
    if name == "embeddings.LayerNorm.weight":
        out = "bert.embeddings.LayerNorm.gamma"
    if name == "embeddings.LayerNorm.bias":
        out = "bert.embeddings.LayerNorm.beta"
    if name == "embeddings.word_embeddings.weight":
        ckpt[out] = ("F16", t.half())
    elif name == "embeddings.position_embeddings.weight":
        ckpt[out] = ("BF16", t.bfloat16().view(torch.int16))  # numpy has no bfloat16
    else:
        ckpt[out] = ("F32", t)
write_safetensors(os.path.join(OUT, "tiny", "model.safetensors.gz"), ckpt)
with open(os.path.join(OUT, "tiny", "config.json"), "w") as f:
    json.dump(cfg, f, indent=2)

def flat(t):
    return [round(float(v), 7) for v in t.reshape(-1).tolist()]

fixture = dict(ids=ids.tolist(), token_types=types.tolist(), mask=mask.tolist(), lengths=lengths,
               hidden_shape=list(hidden.shape), last_hidden_state=flat(hidden), cls=flat(cls),
               mean=flat(mean), pooler=flat(pooler), torch_version=torch.__version__)
with open(os.path.join(OUT, "expected.json"), "w") as f:
    json.dump(fixture, f)
print("wrote", OUT, "torch", torch.__version__)
