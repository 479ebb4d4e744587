#!/usr/bin/env python3
"""Writes models/qwen3/testdata/: a tiny random Qwen3 saved as a sentence-transformers directory
laid out as Qwen3-Embedding is (Transformer, last-token Pooling, Normalize; left padding; the
query prompt "Instruct: {task}\\nQuery:" in config_sentence_transformers.json, no document
prompt), with a byte-level BPE tokenizer.json, and the reference ids and embeddings of
sentence-transformers and transformers (the venv of scripts/install-st.sh has them).

    ~/.cache/toolret/venv/bin/python scripts/parity/make_qwen3_fixture.py

Nothing is downloaded. The tokenizer is trained here with the tokenizers library (BPE) and laid
out as Qwen2's tokenizer.json: NFC normalizer, the Qwen2 Split regex then ByteLevel (no prefix
space, no regex), ByteLevel decoder, specials <|endoftext|> <|im_start|> <|im_end|> after the
learned vocabulary, and the TemplateProcessing "$A <|endoftext|>" Qwen3-Embedding's tokenizer
appends (the pooled token is that <|endoftext|>). <|endoftext|> pads, on the left.

The model: hidden 48, 3 layers, 4 heads of head_dim 16 (q_proj is 48 -> 64: head_dim is not
hidden / heads), 2 key-value heads (GQA), intermediate 80, rope_theta 1000 (so positions
matter in a short text), rms_norm_eps 1e-6; weights drawn larger than initializer_range so every
layer matters numerically (RMSNorm weights 1 + 0.2 N(0, 1)). max_seq_length 64 truncates the
long document; the tokenizer truncates the text and still appends <|endoftext|>, so the pooled
last token is <|endoftext|> there too.

Outputs, in testdata/: tiny/ (the sentence-transformers directory) and expected.json: for the
queries (encode_query, prompt applied) and documents (encode_document) the ids
sentence-transformers feeds the model and its embeddings (float32); for a batch of every text
padded on the left (as the tokenizer pads) and on the right, the ids, mask and transformers'
last_hidden_state.
"""
import json, math, os, shutil, tempfile
import torch
from tokenizers import Tokenizer, Regex, models, trainers, normalizers, pre_tokenizers, processors, decoders
from transformers import Qwen3Config, Qwen3Model, PreTrainedTokenizerFast
from sentence_transformers import SentenceTransformer, models as st_models

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "models", "qwen3", "testdata")
MAX_SEQ = 64
QUERY_PROMPT = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"

QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")

CORPUS = [
    "Find the weather forecast for Paris tomorrow.",
    "Send an email to Bob with the quarterly report attached.",
    "Search the web for recent news about renewable energy.",
    "Create a calendar event for the team meeting on Monday at 10 am.",
    "List all open pull requests in the repository and summarize them.",
    "Convert 100 US dollars to euros at today's exchange rate.",
    "Read the file config.yaml and return its contents.",
    "Query the database for customers who signed up last week.",
    "Instruct: Given a web search query, retrieve relevant passages that answer the query",
    "Wie wird das Wetter morgen in Berlin?",
    "查询明天北京的天气预报。",
]

QUERIES = [
    "weather in Paris",
    "send an e-mail to Bob",
    "查询天气",
    "",
]
DOCUMENTS = [
    "get_weather: returns the forecast for a city",
    "send_email(to, subject, body) sends a message",
    "Search the web for recent news about renewable energy and then translate every headline "
    "into German, French and Chinese before sending it to the whole team and the managers, "
    "then file the summary in the shared folder and remind everyone on Friday morning",  # truncated
    "x",
]


def train_tokenizer():
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(CORPUS * 3, trainer)
    tok.add_special_tokens(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    eot = tok.token_to_id("<|endoftext|>")
    tok.post_processor = processors.TemplateProcessing(
        single="$A <|endoftext|>", pair="$A <|endoftext|> $B <|endoftext|>",
        special_tokens=[("<|endoftext|>", eot)])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    return tok, eot


def main():
    torch.manual_seed(20261129)
    tok, eot = train_tokenizer()
    vocab = tok.get_vocab_size()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                                   padding_side="left", model_max_length=128)
    cfg = Qwen3Config(vocab_size=vocab, hidden_size=48, intermediate_size=80, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, hidden_act="silu",
                      max_position_embeddings=128, rms_norm_eps=1e-6, rope_theta=1000.0,
                      tie_word_embeddings=True, pad_token_id=None, bos_token_id=eot, eos_token_id=eot)
    m = Qwen3Model(cfg).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif "embed_tokens" in name:
                p.copy_(torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / math.sqrt(p.shape[1]))

    tiny = os.path.join(OUT, "tiny")
    shutil.rmtree(tiny, ignore_errors=True)
    with tempfile.TemporaryDirectory() as hf:
        m.save_pretrained(hf, safe_serialization=True)
        fast.save_pretrained(hf)
        tc = json.load(open(os.path.join(hf, "tokenizer_config.json")))
        tc["tokenizer_class"] = "Qwen2Tokenizer"
        tc["padding_side"] = "left"
        json.dump(tc, open(os.path.join(hf, "tokenizer_config.json"), "w"), indent=2)
        word = st_models.Transformer(hf, max_seq_length=MAX_SEQ)
        pool = st_models.Pooling(word.get_word_embedding_dimension(), pooling_mode="lasttoken")
        st = SentenceTransformer(modules=[word, pool, st_models.Normalize()], device="cpu",
                                 prompts={"query": QUERY_PROMPT, "document": ""})
        st.save(tiny)
    for junk in ["README.md"]:
        p = os.path.join(tiny, junk)
        if os.path.exists(p):
            os.remove(p)

    # Reload as a user would, and take the references from the saved directory.
    st = SentenceTransformer(tiny, device="cpu")
    assert st.tokenizer.padding_side == "left", st.tokenizer.padding_side
    assert st.prompts.get("query") == QUERY_PROMPT, st.prompts
    texts = [QUERY_PROMPT + q for q in QUERIES] + list(DOCUMENTS)
    ids = [st.tokenize([t])["input_ids"][0].tolist() for t in texts]
    q_emb = st.encode_query(QUERIES, batch_size=len(QUERIES), convert_to_numpy=True)
    d_emb = st.encode_document(DOCUMENTS, batch_size=len(DOCUMENTS), convert_to_numpy=True)
    # The whole set in one left-padded batch, as sentence-transformers pads it.
    feats = st.tokenize(texts)
    left_ids, left_mask = feats["input_ids"], feats["attention_mask"]
    for i, x in enumerate(ids):
        assert left_ids[i][left_mask[i].bool()].tolist() == x
    S = left_ids.shape[1]
    right_ids = torch.full((len(ids), S), eot, dtype=torch.long)
    right_mask = torch.zeros((len(ids), S), dtype=torch.long)
    for i, x in enumerate(ids):
        right_ids[i, :len(x)] = torch.tensor(x)
        right_mask[i, :len(x)] = 1
    hfm = st[0].auto_model.eval()
    with torch.no_grad():
        h_left = hfm(input_ids=left_ids, attention_mask=left_mask).last_hidden_state
        h_right = hfm(input_ids=right_ids, attention_mask=right_mask).last_hidden_state
    saved = Tokenizer.from_file(os.path.join(tiny, "tokenizer.json"))
    saved_ids = [saved.encode(t).ids for t in texts]
    import transformers, sentence_transformers, tokenizers

    def f(x):
        return [float(f"{float(v):.8g}") for v in x.flatten()]

    json.dump({
        "versions": {"transformers": transformers.__version__, "sentence_transformers": sentence_transformers.__version__,
                     "tokenizers": tokenizers.__version__, "torch": torch.__version__},
        "query_prompt": QUERY_PROMPT, "queries": QUERIES, "documents": DOCUMENTS, "max_seq_length": MAX_SEQ,
        "texts": texts, "ids": ids, "tokenizer_json_ids": saved_ids,
        "embeddings": [[float(v) for v in row] for row in list(q_emb) + list(d_emb)],
        "left": {"ids": left_ids.tolist(), "mask": left_mask.tolist(), "last_hidden_state": f(h_left)},
        "right": {"ids": right_ids.tolist(), "mask": right_mask.tolist(), "last_hidden_state": f(h_right)},
        "hidden_shape": list(h_left.shape),
    }, open(os.path.join(OUT, "expected.json"), "w"))
    print("wrote", OUT, "vocab", vocab, "S", S, "lens", [len(x) for x in ids])


if __name__ == "__main__":
    main()
