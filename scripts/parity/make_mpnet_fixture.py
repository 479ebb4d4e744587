#!/usr/bin/env python3
"""Writes models/mpnet/testdata/: a tiny random MPNet in HF layout and the reference outputs of
HF transformers' own MPNetModel (the venv of scripts/install-st.sh has transformers and torch).

    ~/.cache/toolret/venv/bin/python scripts/parity/make_mpnet_fixture.py

The batch is right-padded (toolret pads right) and 40 tokens long, so that relative distances
run past MPNet's 8 exact buckets into the logarithmic ones; the bucket of every relative
position in [-300, 300] (past the saturation at 128) is written too, from transformers'
MPNetEncoder.relative_position_bucket. Weights are drawn larger than initializer_range so that
every layer matters numerically.
"""
import json, math, os
import torch
from safetensors.torch import save_file
from transformers import MPNetConfig, MPNetModel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "models", "mpnet", "testdata")
torch.manual_seed(20261126)
cfg = MPNetConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=64, hidden_act="gelu", max_position_embeddings=66,
                  relative_attention_num_buckets=32, layer_norm_eps=1e-5, pad_token_id=1)
m = MPNetModel(cfg).eval()
with torch.no_grad():
    for name, p in m.named_parameters():
        if name.endswith("LayerNorm.weight"):
            p.copy_(1 + 0.1 * torch.randn_like(p))
        elif name.endswith(".bias") or "LayerNorm" in name:
            p.copy_(0.1 * torch.randn_like(p))
        elif p.dim() == 2 and "embeddings" not in name and "relative_attention_bias" not in name:
            p.copy_(torch.randn_like(p) / math.sqrt(p.shape[1]))
        else:
            p.copy_(0.5 * torch.randn_like(p))
os.makedirs(os.path.join(OUT, "tiny"), exist_ok=True)
state = {k: v.contiguous() for k, v in m.state_dict().items()}
save_file(state, os.path.join(OUT, "tiny", "model.safetensors"), metadata={"format": "pt"})
c = cfg.to_dict()
c["architectures"] = ["MPNetModel"]
json.dump(c, open(os.path.join(OUT, "tiny", "config.json"), "w"), indent=2, sort_keys=True)

S = 40
lengths = [40, 23, 5]
ids = torch.full((len(lengths), S), cfg.pad_token_id, dtype=torch.long)
mask = torch.zeros((len(lengths), S), dtype=torch.long)
for i, n in enumerate(lengths):
    ids[i, :n] = torch.randint(3, cfg.vocab_size, (n,))
    ids[i, 0], ids[i, n - 1] = 0, 2
    mask[i, :n] = 1
with torch.no_grad():
    out = m(input_ids=ids, attention_mask=mask)
h = out.last_hidden_state
mean = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
rel = torch.arange(-300, 301)
buckets = m.encoder.relative_position_bucket(rel, num_buckets=32)
json.dump({
    "ids": ids.tolist(), "mask": mask.tolist(), "lengths": lengths, "hidden_shape": list(h.shape),
    "last_hidden_state": h.flatten().tolist(), "mean": mean.flatten().tolist(),
    "pooler": out.pooler_output.flatten().tolist(),
    "bucket_from": -300, "buckets": buckets.tolist(),
}, open(os.path.join(OUT, "expected.json"), "w"))
print("wrote", OUT)
