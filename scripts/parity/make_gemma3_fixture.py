#!/usr/bin/env python3
"""Writes models/gemma3/testdata/: a tiny random Gemma3 text model saved as a sentence-transformers
directory laid out as EmbeddingGemma is (Transformer with bidirectional attention, mean Pooling,
Dense without bias and identity activation to a wider width, Dense back to hidden, Normalize;
the "query" and "document" prompts of EmbeddingGemma in config_sentence_transformers.json),
with a byte-fallback BPE tokenizer.json, and the reference ids and embeddings of
sentence-transformers and transformers (the venv of scripts/install-st.sh has them).

    ~/.cache/toolret/venv/bin/python scripts/parity/make_gemma3_fixture.py

Nothing is downloaded. The tokenizer is trained here with the tokenizers library (BPE with
byte_fallback) and laid out as Gemma's tokenizer.json: <pad> <eos> <bos> <unk> at ids 0-3, the
byte tokens <0x00>..<0xFF> next (plain vocabulary entries, not added tokens), spaces replaced
by U+2581 by the normalizer, no pre-tokenizer, the Replace / ByteFallback / Fuse decoder, and
the template "<bos> $A <eos>" EmbeddingGemma's tokenizer applies. Right padding with <pad>.

The model: hidden 64, 3 layers (sliding, sliding, full), 4 heads of head_dim 24 (q_proj is
64 -> 96), 2 key-value heads (GQA), intermediate 96, query_pre_attn_scalar 20 (not head_dim),
sliding_window 6 (with use_bidirectional_attention transformers attends |i - j| < 6 // 2 + 1),
rope_theta 1000 for the full layer and rope_local_base_freq 100 for the sliding ones,
gelu_pytorch_tanh; weights drawn larger than initializer_range (Gemma RMSNorm weights 0.2
N(0, 1) around the 1 it adds), and the script checks that the sliding window changes the
output. The Dense modules are 64 -> 96 -> 64 (EmbeddingGemma: 768 -> 3072 -> 768).

A second directory, testdata/causal/, holds the same weights with use_bidirectional_attention
false (causal attention, causal sliding window) and attn_logit_softcapping 2, the Gemma3 text
model as a decoder: its last_hidden_state checks the causal paths, and that toolret, like
transformers 5.24's Gemma3Attention (which stores attn_logit_softcapping but never passes it to
the attention function), does not soft-cap.

Outputs, in testdata/: tiny/ (the sentence-transformers directory), causal/ (config.json,
model.safetensors) and expected.json: for the queries (encode_query) and documents
(encode_document) the ids sentence-transformers feeds the model and its embeddings (float32);
for a right-padded batch of them (ids, mask) transformers' last_hidden_state of tiny/ and of
causal/.
"""
import json, math, os, shutil, tempfile
import torch
from tokenizers import Tokenizer, models, trainers, normalizers, processors, decoders
from transformers import Gemma3TextConfig, Gemma3TextModel, PreTrainedTokenizerFast
from sentence_transformers import SentenceTransformer, models as st_models

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "models", "gemma3", "testdata")
MAX_SEQ = 48
PROMPTS = {
    "query": "task: search result | query: ",
    "document": "title: none | text: ",
    "Classification": "task: classification | query: ",
}

CORPUS = [
    "Find the weather forecast for Paris tomorrow.",
    "Send an email to Bob with the quarterly report attached.",
    "Search the web for recent news about renewable energy.",
    "Create a calendar event for the team meeting on Monday at 10 am.",
    "List all open pull requests in the repository and summarize them.",
    "Convert 100 US dollars to euros at today's exchange rate.",
    "Read the file config.yaml and return its contents.",
    "task: search result | query: title: none | text: ",
    "Wie wird das Wetter morgen in Berlin?",
]

QUERIES = [
    "weather in Paris",
    "send an e-mail to Bob",
    "北京天气",          # unseen characters: byte fallback
    "",
]
DOCUMENTS = [
    "get_weather: returns the forecast for a city",
    "send_email(to, subject, body) sends a message to the given address 📧",
    "Search the web for recent news about renewable energy and then translate every headline "
    "into German, French and Chinese before sending it to the whole team",  # truncated
    "x",
]


def train_tokenizer():
    specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=specials + byte_tokens, show_progress=False)
    tok.train_from_iterator(CORPUS * 3, trainer)
    # The byte tokens are vocabulary entries in Gemma's tokenizer.json, not added tokens.
    j = json.loads(tok.to_str())
    j["added_tokens"] = [t for t in j["added_tokens"] if t["content"] in specials]
    tok = Tokenizer.from_str(json.dumps(j))
    ids = {t: tok.token_to_id(t) for t in specials}
    assert ids == {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3}, ids
    assert tok.token_to_id("<0x00>") == 4 and tok.token_to_id("<0xFF>") == 259
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A <eos>", pair="<bos> $A <eos> $B <eos>", special_tokens=[("<bos>", 2), ("<eos>", 1)])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    return tok


def make_config(vocab, **kw):
    args = dict(vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                num_attention_heads=4, num_key_value_heads=2, head_dim=24, query_pre_attn_scalar=20,
                sliding_window=6, layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                rope_theta=1000.0, rope_local_base_freq=100.0, hidden_activation="gelu_pytorch_tanh",
                max_position_embeddings=128, rms_norm_eps=1e-6, pad_token_id=0, eos_token_id=1,
                bos_token_id=2, use_bidirectional_attention=True, attn_logit_softcapping=None,
                final_logit_softcapping=None)
    args.update(kw)
    return Gemma3TextConfig(**args)


def main():
    torch.manual_seed(20261128)
    tok = train_tokenizer()
    vocab = tok.get_vocab_size()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", unk_token="<unk>",
                                   pad_token="<pad>", padding_side="right", model_max_length=128)
    cfg = make_config(vocab)
    m = Gemma3TextModel(cfg).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "norm" in name:
                p.copy_(0.2 * torch.randn_like(p))
            elif "embed_tokens" in name:
                p.copy_(0.3 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / math.sqrt(p.shape[1]))

    tiny = os.path.join(OUT, "tiny")
    shutil.rmtree(tiny, ignore_errors=True)
    with tempfile.TemporaryDirectory() as hf:
        m.save_pretrained(hf, safe_serialization=True)
        fast.save_pretrained(hf)
        tc = json.load(open(os.path.join(hf, "tokenizer_config.json")))
        tc["tokenizer_class"] = "GemmaTokenizer"
        json.dump(tc, open(os.path.join(hf, "tokenizer_config.json"), "w"), indent=2)
        word = st_models.Transformer(hf, max_seq_length=MAX_SEQ)
        pool = st_models.Pooling(64, pooling_mode="mean")
        up = st_models.Dense(64, 96, bias=False, activation_function=torch.nn.Identity())
        down = st_models.Dense(96, 64, bias=False, activation_function=torch.nn.Identity())
        with torch.no_grad():
            for d in (up, down):
                d.linear.weight.copy_(torch.randn_like(d.linear.weight) / math.sqrt(d.linear.weight.shape[1]))
        st = SentenceTransformer(modules=[word, pool, up, down, st_models.Normalize()], device="cpu", prompts=PROMPTS)
        st.save(tiny)
    for junk in ["README.md"]:
        p = os.path.join(tiny, junk)
        if os.path.exists(p):
            os.remove(p)

    # Reload as a user would, and take the references from the saved directory.
    st = SentenceTransformer(tiny, device="cpu")
    hfm = st[0].auto_model.eval()
    assert hfm.config.use_bidirectional_attention, hfm.config
    texts = [PROMPTS["query"] + q for q in QUERIES] + [PROMPTS["document"] + d for d in DOCUMENTS]
    ids = [st.tokenize([t])["input_ids"][0].tolist() for t in texts]
    q_emb = st.encode_query(QUERIES, batch_size=len(QUERIES), convert_to_numpy=True)
    d_emb = st.encode_document(DOCUMENTS, batch_size=len(DOCUMENTS), convert_to_numpy=True)
    S = max(len(x) for x in ids)
    batch = torch.zeros((len(ids), S), dtype=torch.long)
    mask = torch.zeros((len(ids), S), dtype=torch.long)
    for i, x in enumerate(ids):
        batch[i, :len(x)] = torch.tensor(x)
        mask[i, :len(x)] = 1
    with torch.no_grad():
        h = hfm(input_ids=batch, attention_mask=mask).last_hidden_state

    # The sliding window matters: the same weights with a window over the whole text differ.
    wide = Gemma3TextModel(make_config(vocab, sliding_window=512)).eval()
    wide.load_state_dict(hfm.state_dict())
    with torch.no_grad():
        hw = wide(input_ids=batch, attention_mask=mask).last_hidden_state
    window_effect = float((hw - h)[mask.bool()].abs().max())
    assert window_effect > 1e-2, window_effect

    causal_dir = os.path.join(OUT, "causal")
    shutil.rmtree(causal_dir, ignore_errors=True)
    causal = Gemma3TextModel(make_config(vocab, use_bidirectional_attention=False, attn_logit_softcapping=2.0)).eval()
    causal.load_state_dict(hfm.state_dict())
    causal.save_pretrained(causal_dir, safe_serialization=True)
    causal = Gemma3TextModel.from_pretrained(causal_dir).eval()
    with torch.no_grad():
        hc = causal(input_ids=batch, attention_mask=mask).last_hidden_state

    saved = Tokenizer.from_file(os.path.join(tiny, "tokenizer.json"))
    saved_ids = [saved.encode(t).ids for t in texts]
    import transformers, sentence_transformers, tokenizers

    def f(x):
        return [float(f"{float(v):.8g}") for v in x.flatten()]

    json.dump({
        "versions": {"transformers": transformers.__version__, "sentence_transformers": sentence_transformers.__version__,
                     "tokenizers": tokenizers.__version__, "torch": torch.__version__},
        "prompts": PROMPTS, "queries": QUERIES, "documents": DOCUMENTS, "max_seq_length": MAX_SEQ,
        "texts": texts, "ids": ids, "tokenizer_json_ids": saved_ids,
        "embeddings": [[float(v) for v in row] for row in list(q_emb) + list(d_emb)],
        "batch_ids": batch.tolist(), "batch_mask": mask.tolist(), "hidden_shape": list(h.shape),
        "last_hidden_state": f(h), "causal_last_hidden_state": f(hc), "window_effect": window_effect,
    }, open(os.path.join(OUT, "expected.json"), "w"))
    print("wrote", OUT, "vocab", vocab, "S", S, "lens", [len(x) for x in ids], "window effect", window_effect)


if __name__ == "__main__":
    main()
