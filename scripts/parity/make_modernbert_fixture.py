#!/usr/bin/env python3
"""Writes models/modernbert/testdata/: a tiny random ModernBERT saved as a sentence-transformers
directory (Transformer + mean Pooling, as nomic-ai/modernbert-embed-base is laid out;
Alibaba-NLP/gte-modernbert-base pools the CLS token instead, which the Go tests check from the
CLS states given here), with the ModernBERT-layout byte-level BPE tokenizer of
scripts/parity/make_bpe_fixture.py (tokenize/testdata/bpe/modernbert/tokenizer.json), and the
reference ids, embeddings and hidden states of sentence-transformers and transformers.

    ~/.cache/toolret/venv/bin/python scripts/parity/make_modernbert_fixture.py

Nothing is downloaded. The model: hidden 32, 3 layers, 2 heads, intermediate 24 (Wi is 32 ->
48, GeGLU), global_attn_every_n_layers 2 (layers 0 and 2 global, layer 1 local),
local_attention 8 (a token sees 4 tokens each side on the local layer) with texts of up to
~40 tokens, so that the window matters; global_rope_theta 160000, local_rope_theta 10000;
norm_bias, attention_bias and mlp_bias false as in the released checkpoints. vocab_size is the
tokenizer's rounded up to a multiple of 8 (the released one pads 50280 tokens to 50368).
Weights are drawn larger than initializer_range so every layer matters numerically.

tiny-bias/ is the same network with norm_bias, attention_bias and mlp_bias true (an HF
directory only), with its last hidden states.

Outputs, in testdata/: tiny/ (sentence-transformers directory), tiny-bias/ (HF directory),
expected.json: texts, max_seq_length, per text the ids sentence-transformers feeds the model,
its embeddings (mean pooling, float32) and the CLS states; for a right-padded batch of those ids
transformers' last_hidden_state (eager attention) for tiny and tiny-bias.
"""
import json, math, os, shutil, tempfile
import torch
from tokenizers import Tokenizer
from transformers import ModernBertConfig, ModernBertModel, PreTrainedTokenizerFast
from sentence_transformers import SentenceTransformer, models as st_models

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "models", "modernbert", "testdata")
TOK = os.path.join(ROOT, "tokenize", "testdata", "bpe", "modernbert", "tokenizer.json")
MAX_SEQ = 40

TEXTS = [
    "Find the weather in Paris",
    "Send an email to Bob with the quarterly report attached and then create a calendar event "
    "for the team meeting on Monday at 10 am.",
    "def add(a, b):\n    return a + b\n",
    "Wie wird das Wetter morgen in München?",
    "查询明天北京的天气",
    "Search the web for recent news about renewable energy. Search the web for recent news "
    "about renewable energy. Search the web for recent news about renewable energy.",  # truncated
    "x",
    "a [MASK] token",
]


def randomize(m):
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
            elif p.dim() == 2 and "embeddings" not in name:
                p.copy_(torch.randn_like(p) / math.sqrt(p.shape[1]))
            else:
                p.copy_(0.5 * torch.randn_like(p))


def config(vocab, tok, bias):
    return ModernBertConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=3, num_attention_heads=2, intermediate_size=24,
        hidden_activation="gelu", max_position_embeddings=128, norm_eps=1e-5, norm_bias=bias,
        attention_bias=bias, mlp_bias=bias, global_attn_every_n_layers=2, local_attention=8,
        global_rope_theta=160000.0, local_rope_theta=10000.0, pad_token_id=tok.token_to_id("[PAD]"),
        cls_token_id=tok.token_to_id("[CLS]"), sep_token_id=tok.token_to_id("[SEP]"),
        bos_token_id=tok.token_to_id("[CLS]"), eos_token_id=tok.token_to_id("[SEP]"),
        attn_implementation="eager")


def padded(ids, pad):
    S = max(len(x) for x in ids)
    batch = torch.full((len(ids), S), pad, dtype=torch.long)
    mask = torch.zeros((len(ids), S), dtype=torch.long)
    for i, x in enumerate(ids):
        batch[i, :len(x)] = torch.tensor(x)
        mask[i, :len(x)] = 1
    return batch, mask


def main():
    torch.manual_seed(20261129)
    tok = Tokenizer.from_file(TOK)
    vocab = (tok.get_vocab_size() + 7) // 8 * 8
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
                                   mask_token="[MASK]", unk_token="[UNK]", model_max_length=128)
    cfg = config(vocab, tok, False)
    m = ModernBertModel(cfg).eval()
    randomize(m)

    tiny = os.path.join(OUT, "tiny")
    shutil.rmtree(tiny, ignore_errors=True)
    with tempfile.TemporaryDirectory() as hf:
        m.save_pretrained(hf, safe_serialization=True)
        fast.save_pretrained(hf)
        word = st_models.Transformer(hf, max_seq_length=MAX_SEQ)
        pool = st_models.Pooling(word.get_word_embedding_dimension(), pooling_mode="mean")
        st = SentenceTransformer(modules=[word, pool], device="cpu")
        st.save(tiny)
    for junk in ["README.md"]:
        p = os.path.join(tiny, junk)
        if os.path.exists(p):
            os.remove(p)

    st = SentenceTransformer(tiny, device="cpu")
    ids = [st.tokenize([t])["input_ids"][0].tolist() for t in TEXTS]
    emb = st.encode(TEXTS, batch_size=len(TEXTS), convert_to_numpy=True)
    hfm = ModernBertModel.from_pretrained(tiny, attn_implementation="eager").eval()
    batch, mask = padded(ids, cfg.pad_token_id)
    with torch.no_grad():
        h = hfm(input_ids=batch, attention_mask=mask).last_hidden_state
    cls = [h[i, 0].tolist() for i in range(len(ids))]
    # Each text alone (no padding) must give the batch's states: padding is masked.
    with torch.no_grad():
        for i, x in enumerate(ids):
            hi = hfm(input_ids=torch.tensor([x])).last_hidden_state[0]
            assert torch.allclose(hi, h[i, :len(x)], atol=1e-5), i
    saved = Tokenizer.from_file(os.path.join(tiny, "tokenizer.json"))
    saved.enable_truncation(MAX_SEQ)
    assert [saved.encode(t).ids for t in TEXTS] == ids, "tokenizer.json and sentence-transformers disagree"

    # The biased variant.
    torch.manual_seed(20261130)
    cfgb = config(vocab, tok, True)
    mb = ModernBertModel(cfgb).eval()
    randomize(mb)
    bias_dir = os.path.join(OUT, "tiny-bias")
    shutil.rmtree(bias_dir, ignore_errors=True)
    mb.save_pretrained(bias_dir, safe_serialization=True)
    with torch.no_grad():
        hb = mb(input_ids=batch, attention_mask=mask).last_hidden_state

    import transformers, sentence_transformers, tokenizers
    json.dump({
        "versions": {"transformers": transformers.__version__, "sentence_transformers": sentence_transformers.__version__,
                     "tokenizers": tokenizers.__version__, "torch": torch.__version__},
        "texts": TEXTS, "max_seq_length": MAX_SEQ, "ids": ids,
        "layer_types": list(cfg.layer_types),
        "embeddings": [[float(v) for v in row] for row in emb],
        "cls": cls,
        "batch_ids": batch.tolist(), "batch_mask": mask.tolist(),
        "hidden_shape": list(h.shape), "last_hidden_state": [float(f"{float(v):.8g}") for v in h.flatten()],
        "bias_last_hidden_state": [float(f"{float(v):.8g}") for v in hb.flatten()],
    }, open(os.path.join(OUT, "expected.json"), "w"))
    print("wrote", OUT, "vocab", vocab, "layer types", cfg.layer_types, "lens", [len(x) for x in ids])


if __name__ == "__main__":
    main()
