#!/usr/bin/env python3
"""Writes models/deberta/testdata/: tiny random DeBERTa-v2/v3 encoders in HF layout and the
PyTorch reference outputs that models/deberta's parity tests compare with.

The reference is a compact re-implementation, in plain torch (transformers is not installed
here), of what HF transformers 4.x DebertaV2Model computes (modeling_deberta_v2.py):

  embeddings  word (+ absolute positions if position_biased_input) (+ token types if
              type_vocab_size > 0) -> embed_proj (no bias) if embedding_size != hidden_size
              -> LayerNorm(layer_norm_eps) -> times the attention mask
  relative    rel_embeddings [2 * span, H] (span = position_buckets if > 0, else
              max_relative_positions, -1 meaning max_position_embeddings), LayerNorm'd once
              (norm_rel_ebd "layer_norm") and shared by all layers; relative position
              r(i, j) = i - j, log-bucketed in float32 when position_buckets > 0
  attention   scores = q.k / s + c2p / s + p2c / s with s = sqrt(d * (1 + |pos_att_type|)),
              c2p(i, j) = q_i . Kr[clamp(r(i, j) + span)]   (Kr: key_proj, or pos_key_proj
                                                              when share_att_key is false)
              p2c(i, j) = k_j . Qr[clamp(-r(j, i) + span)]  (Qr: query_proj / pos_query_proj)
              softmax with XSoftmax semantics: entries with mask_i * mask_j = 0 are set to
              finfo.min before and to 0 after the softmax
  layers      post-LN: dense, residual, LayerNorm; intermediate with exact erf GELU; output
              dense, residual, LayerNorm
  pooler      ContextPooler: pooler_hidden_act(dense([CLS]))

Inside the script the vectorised attention scores are checked against a plain per-(i, j) loop
(scalar bucket function, float64 dot products) on sampled entries of every layer, row and
head, and on every entry of a short row; the probabilities of whole rows too.

Three configurations (2 layers, hidden 64, 4 heads):
  v3        deberta-v3-like: position_buckets 256, max_position_embeddings 512,
            share_att_key, pos_att_type "p2c|c2p", norm_rel_ebd layer_norm, no absolute
            positions, no token types; a padded batch with lengths 1..512. The checkpoint
            uses the "deberta." prefix, F16 matrices, the ContextPooler (pooler.dense.*,
            unprefixed as DebertaV2ForSequenceClassification names it) and the tensors hub
            checkpoints carry that the encoder does not use (lm_predictions.*,
            mask_predictions.*, embeddings.position_embeddings).
  buckets8  8 buckets, max_relative_positions 32, pos_att_type ["c2p"] with a separate
            pos_key_proj, absolute positions and 2 token types, no rel LayerNorm, no prefix.
  embproj   embedding_size 32 != hidden 64 (embed_proj), no buckets
            (max_relative_positions 24, clamped), pos_att_type "p2c" with pos_query_proj.

Outputs per configuration, in testdata/<name>/: config.json, model.safetensors, expected.json
(ids, token types, mask, lengths, the relative-position bucket table r(d) for
d = -(S-1)..S-1, pooler output for v3) and hidden.f32: the last hidden states of every
non-pad position, row by row, as little-endian float32.

Run with Debian's PyTorch:
    env -u OPENBLAS_CORETYPE /usr/bin/python3 scripts/deberta/make_fixture.py
"""
import json, math, os, random, struct
import numpy as np
import torch

torch.set_num_threads(1)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "models", "deberta", "testdata")
F32 = torch.float32


def att_types(cfg):
    t = cfg.get("pos_att_type") or []
    if isinstance(t, str):
        t = [x.strip() for x in t.lower().split("|")]
    return t


def span_of(cfg):
    maxrel = cfg.get("max_relative_positions", -1)
    if maxrel < 1:
        maxrel = cfg["max_position_embeddings"]
    buckets = cfg.get("position_buckets", -1)
    return (buckets if buckets > 0 else maxrel), buckets, maxrel


def rel_positions(S, buckets, maxrel):
    """r(i, j) for i, j < S: i - j, log-bucketed (float32 arithmetic) when buckets > 0."""
    d = (torch.arange(S)[:, None] - torch.arange(S)[None, :])
    if buckets <= 0:
        return d
    mid = buckets // 2
    a = d.abs()
    inner = (d < mid) & (d > -mid)
    a = torch.where(inner, torch.full_like(a, mid - 1), a)
    ratio = a.to(F32) / mid                                       # true division: float32
    denom = torch.log(torch.tensor((maxrel - 1) / mid, dtype=F32))
    logb = torch.ceil(torch.log(ratio) / denom * (mid - 1)) + mid
    out = torch.where(a <= mid, d.to(F32), logb * torch.sign(d).to(F32))
    return out.long()


def bucket_scalar(d, buckets, maxrel):
    """The same function for one relative position, with numpy float32 scalars."""
    if buckets <= 0 or abs(d) <= buckets // 2:
        return d
    mid = buckets // 2
    x = np.log(np.float32(abs(d)) / np.float32(mid)) / np.log(np.float32((maxrel - 1) / mid)) * np.float32(mid - 1)
    v = int(math.ceil(float(np.float32(x)))) + mid
    return v if d > 0 else -v


def make_weights(cfg, seed):
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, std=0.5):
        return torch.randn(*shape, generator=g, dtype=F32) * std

    H, I, L, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    E = cfg.get("embedding_size", H)
    span, _, _ = span_of(cfg)
    types = att_types(cfg)
    W = {}

    def ln(name, n=H):
        W[name + ".weight"] = 1 + rnd(n, std=0.1)
        W[name + ".bias"] = rnd(n, std=0.1)

    def lin(name, o, i, bias=True):
        W[name + ".weight"] = rnd(o, i, std=1 / math.sqrt(i))
        if bias:
            W[name + ".bias"] = rnd(o, std=0.1)

    W["embeddings.word_embeddings.weight"] = rnd(V, E)
    if cfg["position_biased_input"]:
        W["embeddings.position_embeddings.weight"] = rnd(cfg["max_position_embeddings"], E)
    if cfg["type_vocab_size"] > 0:
        W["embeddings.token_type_embeddings.weight"] = rnd(cfg["type_vocab_size"], E)
    if E != H:
        lin("embeddings.embed_proj", H, E, bias=False)
    ln("embeddings.LayerNorm")
    W["encoder.rel_embeddings.weight"] = rnd(2 * span, H)
    if "layer_norm" in cfg.get("norm_rel_ebd", "none"):
        ln("encoder.LayerNorm")
    for l in range(L):
        p = f"encoder.layer.{l}."
        for m in ["query_proj", "key_proj", "value_proj"]:
            lin(p + "attention.self." + m, H, H)
        if not cfg.get("share_att_key", False):
            if "c2p" in types:
                lin(p + "attention.self.pos_key_proj", H, H)
            if "p2c" in types:
                lin(p + "attention.self.pos_query_proj", H, H)
        lin(p + "attention.output.dense", H, H)
        ln(p + "attention.output.LayerNorm")
        lin(p + "intermediate.dense", I, H)
        lin(p + "output.dense", H, I)
        ln(p + "output.LayerNorm")
    return W


class Reference:
    def __init__(self, cfg, W):
        self.cfg, self.W = cfg, W
        self.H = cfg["hidden_size"]
        self.NH = cfg["num_attention_heads"]
        self.types = att_types(cfg)
        self.span, self.buckets, self.maxrel = span_of(cfg)
        self.captured = []  # per layer: q, k, pos_key, pos_query, scores, probs

    def ln(self, x, name):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), self.W[name + ".weight"], self.W[name + ".bias"],
                                              self.cfg["layer_norm_eps"])

    def lin(self, x, name):
        y = x @ self.W[name + ".weight"].T
        if name + ".bias" in self.W:
            y = y + self.W[name + ".bias"]
        return y

    def act(self, x, name):
        if name == "gelu":
            return torch.nn.functional.gelu(x)  # exact erf GELU
        if name == "tanh":
            return torch.tanh(x)
        raise ValueError(name)

    def forward(self, ids, types, mask):
        cfg, W = self.cfg, self.W
        B, S = ids.shape
        x = W["embeddings.word_embeddings.weight"][ids]
        if cfg["position_biased_input"]:
            x = x + W["embeddings.position_embeddings.weight"][:S][None]
        if cfg["type_vocab_size"] > 0:
            x = x + W["embeddings.token_type_embeddings.weight"][types]
        if "embeddings.embed_proj.weight" in W:
            x = self.lin(x, "embeddings.embed_proj")
        x = self.ln(x, "embeddings.LayerNorm") * mask[..., None].to(F32)
        rel = W["encoder.rel_embeddings.weight"]
        if "layer_norm" in cfg.get("norm_rel_ebd", "none"):
            rel = self.ln(rel, "encoder.LayerNorm")
        r = rel_positions(S, self.buckets, self.maxrel)
        keep = (mask[:, None, :, None] * mask[:, None, None, :]).bool()  # [B, 1, S, S]
        for l in range(cfg["num_hidden_layers"]):
            x = self.layer(x, rel, r, keep, f"encoder.layer.{l}.")
        return x

    def layer(self, x, rel, r, keep, p):
        B, S, H = x.shape
        NH, d = self.NH, H // self.NH
        a = p + "attention.self."

        def heads(t):
            return t.view(t.shape[0], t.shape[1], NH, d).permute(0, 2, 1, 3)

        q, k, v = (heads(self.lin(x, a + n)) for n in ("query_proj", "key_proj", "value_proj"))
        sf = 1 + ("c2p" in self.types) + ("p2c" in self.types)
        s = torch.sqrt(torch.tensor(d, dtype=F32) * sf)
        scores = q @ k.transpose(-1, -2) / s
        span = self.span
        relv = rel[: 2 * span][None]
        share = self.cfg.get("share_att_key", False)
        pk = pq = None
        bias = 0
        if "c2p" in self.types:
            pk = heads(self.lin(relv, a + ("key_proj" if share else "pos_key_proj")))[0]  # [NH, 2span, d]
            c2p = q @ pk.transpose(-1, -2)                                               # [B, NH, S, 2span]
            idx = torch.clamp(r + span, 0, 2 * span - 1)
            bias = bias + torch.gather(c2p, -1, idx.expand(B, NH, S, S)) / s
        if "p2c" in self.types:
            pq = heads(self.lin(relv, a + ("query_proj" if share else "pos_query_proj")))[0]
            p2c = k @ pq.transpose(-1, -2)                                               # [B, NH, S(key), 2span]
            idx = torch.clamp(-r + span, 0, 2 * span - 1)
            bias = bias + torch.gather(p2c, -1, idx.expand(B, NH, S, S)).transpose(-1, -2) / s
        scores = scores + bias
        lowest = torch.finfo(F32).min
        probs = torch.softmax(scores.masked_fill(~keep, lowest), -1).masked_fill(~keep, 0)
        self.captured.append((q, k, pk, pq, s, scores, probs, keep))
        ctx = (probs @ v).permute(0, 2, 1, 3).reshape(B, S, H)
        o = p + "attention.output."
        x = self.ln(self.lin(ctx, o + "dense") + x, o + "LayerNorm")
        inter = self.act(self.lin(x, p + "intermediate.dense"), self.cfg["hidden_act"])
        return self.ln(self.lin(inter, p + "output.dense") + x, p + "output.LayerNorm")

    def pooler(self, hidden):
        return self.act(self.lin(hidden[:, 0], "pooler.dense"), self.cfg.get("pooler_hidden_act", "gelu"))


def loop_check(ref, lengths, rng):
    """Checks the captured attention of every layer against a per-(i, j) loop."""
    span, buckets, maxrel = ref.span, ref.buckets, ref.maxrel
    worst_s = worst_p = 0.0
    checked = 0
    for (q, k, pk, pq, s, scores, probs, keep) in ref.captured:
        q, k = q.double(), k.double()
        pk = pk.double() if pk is not None else None
        pq = pq.double() if pq is not None else None
        s = float(s)
        B, NH, S, _ = q.shape

        def score(b, h, i, j):
            v = float(q[b, h, i] @ k[b, h, j]) / s
            if pk is not None:
                v += float(q[b, h, i] @ pk[h, min(max(bucket_scalar(i - j, buckets, maxrel) + span, 0), 2 * span - 1)]) / s
            if pq is not None:
                v += float(k[b, h, j] @ pq[h, min(max(-bucket_scalar(j - i, buckets, maxrel) + span, 0), 2 * span - 1)]) / s
            return v

        for b, n in enumerate(lengths):
            pairs = [(rng.randrange(n), rng.randrange(n)) for _ in range(60)]
            pairs += [(n - 1, 0), (0, n - 1), (n - 1, n - 1)]
            if n <= 40:
                pairs = [(i, j) for i in range(n) for j in range(n)]
            for h in range(NH):
                for i, j in pairs:
                    want = score(b, h, i, j)
                    got = float(scores[b, h, i, j])
                    worst_s = max(worst_s, abs(got - want) / max(1.0, abs(want)))
                    checked += 1
                # One whole probability row: masked softmax by hand.
                i = rng.randrange(n)
                row = [score(b, h, i, j) for j in range(n)]
                m = max(row)
                e = [math.exp(v - m) for v in row]
                z = sum(e)
                for j in range(S):
                    want = e[j] / z if j < n else 0.0
                    worst_p = max(worst_p, abs(float(probs[b, h, i, j]) - want))
                # A padded query row attends nowhere.
                if n < S:
                    assert float(probs[b, h, n:].abs().max()) == 0, "pad query rows must be zero"
    assert worst_s < 2e-5, f"vectorised scores differ from the loop by {worst_s:.2e}"
    assert worst_p < 2e-6, f"vectorised probabilities differ from the loop by {worst_p:.2e}"
    return checked, worst_s, worst_p


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
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)


def build(name, cfg, lengths, seed, prefix, half=False, heads=False, pooler=False, pair=False):
    rng = random.Random(seed)
    W = make_weights(cfg, seed)
    if pooler:
        H = cfg["hidden_size"]
        g = torch.Generator().manual_seed(seed + 1)
        W["pooler.dense.weight"] = torch.randn(H, H, generator=g) / math.sqrt(H)
        W["pooler.dense.bias"] = torch.randn(H, generator=g) * 0.1
    if half:  # matrices stored as F16: the reference uses the rounded values
        for n, t in W.items():
            if t.dim() == 2:
                W[n] = t.half().float()
    V, S = cfg["vocab_size"], max(lengths)
    ids = torch.zeros(len(lengths), S, dtype=torch.long)
    types = torch.zeros_like(ids)
    mask = torch.zeros_like(ids)
    gen = torch.Generator().manual_seed(seed + 2)
    for i, n in enumerate(lengths):
        body = torch.randint(5, V, (n,), generator=gen)
        body[0] = 1  # [CLS]
        if n > 1:
            body[-1] = 2  # [SEP]
        ids[i, :n] = body
        mask[i, :n] = 1
        if pair and n > 4:
            types[i, n // 2:n] = 1
    ref = Reference(cfg, W)
    with torch.no_grad():
        hidden = ref.forward(ids, types, mask)
        checked, ws, wp = loop_check(ref, lengths, rng)
        pooled = ref.pooler(hidden) if pooler else None

    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    ckpt = {}
    for n, t in W.items():
        out = n if (n.startswith("pooler.") or not prefix) else "deberta." + n
        ckpt[out] = ("F16", t.half()) if half and t.dim() == 2 else ("F32", t)
    if heads:  # what hub checkpoints (DebertaV2ForMaskedLM / RTD) carry besides the encoder
        H, g = cfg["hidden_size"], torch.Generator().manual_seed(seed + 3)
        extra = {
            "deberta.embeddings.position_embeddings.weight": (cfg["max_position_embeddings"], H),
            "lm_predictions.lm_head.dense.weight": (H, H), "lm_predictions.lm_head.dense.bias": (H,),
            "lm_predictions.lm_head.LayerNorm.weight": (H,), "lm_predictions.lm_head.LayerNorm.bias": (H,),
            "lm_predictions.lm_head.bias": (V,),
            "mask_predictions.dense.weight": (H, H), "mask_predictions.dense.bias": (H,),
            "mask_predictions.LayerNorm.weight": (H,), "mask_predictions.LayerNorm.bias": (H,),
            "mask_predictions.classifier.weight": (1, H), "mask_predictions.classifier.bias": (1,),
        }
        for n, shape in extra.items():
            ckpt[n] = ("F16", (torch.randn(*shape, generator=g) * 0.1).half())
    write_safetensors(os.path.join(d, "model.safetensors"), ckpt)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")

    span, buckets, maxrel = span_of(cfg)
    table = [bucket_scalar(x, buckets, maxrel) for x in range(-(S - 1), S)]  # r(d), d = -(S-1)..S-1
    vec = rel_positions(2 * S - 1, buckets, maxrel)[:, S - 1].tolist()  # i - (S-1) for i = 0..2S-2
    assert table == vec, "scalar and vectorised bucket functions disagree"
    exp = dict(ids=ids.tolist(), token_types=types.tolist(), mask=mask.tolist(), lengths=lengths,
               hidden=cfg["hidden_size"], buckets=table, torch_version=torch.__version__)
    if pooled is not None:
        exp["pooler"] = [float(v) for v in pooled.reshape(-1).tolist()]
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(exp, f)
    rows = [hidden[i, :n].reshape(-1) for i, n in enumerate(lengths)]
    with open(os.path.join(d, "hidden.f32"), "wb") as f:
        f.write(torch.cat(rows).numpy().astype("<f4").tobytes())
    print(f"{name}: {len(lengths)} rows, lengths {lengths}; loop-checked {checked} scores "
          f"(max rel diff {ws:.1e}), probability rows max diff {wp:.1e}")


def main():
    # The bucket values the Go tests pin (256 buckets, 512 positions).
    for dist, want in {200: 169, 256: 192, 300: 207, 511: 255, 512: 256, 128: 128, 129: 129}.items():
        got = int(rel_positions(dist + 1, 256, 512)[dist, 0])
        assert got == want == bucket_scalar(dist, 256, 512) and -got == bucket_scalar(-dist, 256, 512), (dist, got, want)

    base = dict(model_type="deberta-v2", architectures=["DebertaV2Model"], vocab_size=400, hidden_size=64,
                num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, hidden_act="gelu",
                hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, initializer_range=0.02,
                pad_token_id=0, relative_attention=True)

    v3 = dict(base, max_position_embeddings=512, type_vocab_size=0, layer_norm_eps=1e-7, position_buckets=256,
              max_relative_positions=-1, norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type="p2c|c2p",
              position_biased_input=False, pooler_hidden_size=64, pooler_dropout=0, pooler_hidden_act="gelu")
    build("v3", v3, [512, 511, 300, 257, 256, 200, 129, 64, 17, 2, 1], seed=11, prefix=True, half=True,
          heads=True, pooler=True)

    b8 = dict(base, vocab_size=300, max_position_embeddings=128, type_vocab_size=2, layer_norm_eps=1e-7,
              position_buckets=8, max_relative_positions=32, norm_rel_ebd="none", share_att_key=False,
              pos_att_type=["c2p"], position_biased_input=True)
    build("buckets8", b8, [100, 77, 40, 33, 9, 4], seed=12, prefix=False, pair=True)

    ep = dict(base, vocab_size=300, embedding_size=32, max_position_embeddings=64, type_vocab_size=0,
              layer_norm_eps=1e-7, max_relative_positions=24, norm_rel_ebd="layer_norm", share_att_key=False,
              pos_att_type="p2c", position_biased_input=False)
    build("embproj", ep, [60, 50, 25, 3], seed=13, prefix=True)


if __name__ == "__main__":  # make_head_fixture.py imports the reference
    main()
