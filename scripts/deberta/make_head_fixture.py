#!/usr/bin/env python3
"""Writes models/classifier/testdata/deberta_seqcls/: a tiny random DeBERTa-v3 sequence
classifier in HF layout and the logits PyTorch computes for it, which models/classifier's
parity test compares toolret's classification head (pooling "pooler") with.

The reference is HF transformers 4.x DebertaV2ForSequenceClassification at inference
(modeling_deberta_v2.py), on top of make_fixture.py's re-implementation of DebertaV2Model
(its vectorised attention checked against a per-(i, j) loop here too):

  pooled = ContextPooler(hidden) = pooler_hidden_act(dense(dropout(hidden[:, 0])))
  logits = classifier(dropout(pooled))

with the dropouts (pooler_dropout, cls_dropout / hidden_dropout_prob) inactive in eval mode.
The checkpoint names tensors as that class's state_dict does: the encoder under "deberta.",
the ContextPooler "pooler.dense.*" and the head "classifier.*" at the top level; config.json
declares architectures ["DebertaV2ForSequenceClassification"], id2label/label2id (3 labels)
and the ContextPooler fields pooler_hidden_size, pooler_hidden_act (gelu: exact erf) and
pooler_dropout.

Configuration: deberta-v3-like (relative attention, share_att_key, pos_att_type p2c|c2p,
norm_rel_ebd layer_norm, no absolute positions, no token types, layer_norm_eps 1e-7), 2 layers,
hidden 64, 4 heads, 128 positions with 64 position buckets (what toolret's -arch deberta
gives a 128-position model), vocabulary 640 (a tokenizer of up to 640 tokens fits); random
weights with non-trivial LayerNorms and biases; a padded batch with lengths 1..128.

Outputs: config.json, model.safetensors (F32), expected.json (ids, mask, lengths, labels,
logits [B, 3], pooled [B, 64]).

Run with Debian's PyTorch:
    env -u OPENBLAS_CORETYPE /usr/bin/python3 scripts/deberta/make_head_fixture.py
"""
import json, math, os, random, sys
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fixture import Reference, loop_check, make_weights, write_safetensors, ROOT  # noqa: E402

torch.set_num_threads(1)
OUT = os.path.join(ROOT, "models", "classifier", "testdata", "deberta_seqcls")
LABELS = ["alpha", "beta", "gamma"]


class SequenceClassification(Reference):
    """DebertaV2ForSequenceClassification in eval mode."""

    def logits(self, ids, types, mask):
        hidden = self.forward(ids, types, mask)
        pooled = self.pooler(hidden)  # ContextPooler: pooler_hidden_act(dense(hidden[:, 0]))
        return self.lin(pooled, "classifier"), pooled


def main():
    seed = 21
    cfg = dict(model_type="deberta-v2", architectures=["DebertaV2ForSequenceClassification"], vocab_size=640,
               hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
               hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
               initializer_range=0.02, pad_token_id=0, relative_attention=True, max_position_embeddings=128,
               type_vocab_size=0, layer_norm_eps=1e-7, position_buckets=64, max_relative_positions=-1,
               norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"],
               position_biased_input=False, pooler_hidden_size=64, pooler_dropout=0.1, pooler_hidden_act="gelu",
               id2label={str(i): l for i, l in enumerate(LABELS)}, label2id={l: i for i, l in enumerate(LABELS)})
    H, n = cfg["hidden_size"], len(LABELS)
    W = make_weights(cfg, seed)
    g = torch.Generator().manual_seed(seed + 1)
    W["pooler.dense.weight"] = torch.randn(H, H, generator=g) / math.sqrt(H)
    W["pooler.dense.bias"] = torch.randn(H, generator=g) * 0.1
    W["classifier.weight"] = torch.randn(n, H, generator=g) * 0.5  # logits of a few units
    W["classifier.bias"] = torch.randn(n, generator=g) * 0.1

    lengths = [128, 100, 64, 33, 17, 5, 2, 1]
    S, V = max(lengths), cfg["vocab_size"]
    ids = torch.zeros(len(lengths), S, dtype=torch.long)
    mask = torch.zeros_like(ids)
    gen = torch.Generator().manual_seed(seed + 2)
    for i, m in enumerate(lengths):
        body = torch.randint(5, V, (m,), generator=gen)
        body[0] = 1  # [CLS]
        if m > 1:
            body[-1] = 2  # [SEP]
        ids[i, :m] = body
        mask[i, :m] = 1
    types = torch.zeros_like(ids)

    ref = SequenceClassification(cfg, W)
    with torch.no_grad():
        logits, pooled = ref.logits(ids, types, mask)
        checked, ws, wp = loop_check(ref, lengths, random.Random(seed))
        # The head by hand, in float64: gelu(x) = x * Phi(x) with the exact erf.
        h0 = ref.forward(ids, types, mask)[:, 0].double()
        pre = h0 @ W["pooler.dense.weight"].double().T + W["pooler.dense.bias"].double()
        p64 = pre * 0.5 * (1 + torch.erf(pre / math.sqrt(2)))
        l64 = p64 @ W["classifier.weight"].double().T + W["classifier.bias"].double()
        dl = float((l64 - logits.double()).abs().max())
        assert dl < 1e-5, f"head by hand differs by {dl:.2e}"

    os.makedirs(OUT, exist_ok=True)
    ckpt = {}
    for name, t in W.items():
        out = name if name.startswith(("pooler.", "classifier.")) else "deberta." + name
        ckpt[out] = ("F32", t)
    write_safetensors(os.path.join(OUT, "model.safetensors"), ckpt)
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    exp = dict(ids=ids.tolist(), mask=mask.tolist(), lengths=lengths, labels=LABELS,
               logits=logits.tolist(), pooled=pooled.tolist(), torch_version=torch.__version__)
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(exp, f)
    print(f"deberta_seqcls: {len(lengths)} rows, lengths {lengths}; loop-checked {checked} scores "
          f"(max rel diff {ws:.1e}), probability rows max diff {wp:.1e}; head by hand (float64) max diff {dl:.1e}; "
          f"logits range [{float(logits.min()):.3f}, {float(logits.max()):.3f}]")


if __name__ == "__main__":
    main()
