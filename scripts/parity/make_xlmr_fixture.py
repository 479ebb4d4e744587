#!/usr/bin/env python3
"""Writes models/xlmroberta/testdata/: a tiny random XLM-RoBERTa saved as a sentence-transformers
directory (Transformer + mean Pooling, as multilingual-e5 is laid out) with a SentencePiece
Unigram tokenizer.json, and the reference token ids and embeddings of sentence-transformers and
transformers (the venv of scripts/install-st.sh has them, and tokenizers).

    ~/.cache/toolret/venv/bin/python scripts/parity/make_xlmr_fixture.py

Nothing is downloaded. The tokenizer is trained here with the tokenizers library (Unigram) on a
small multilingual text (English, German, Chinese, French, Japanese) and laid out as
transformers' XLMRobertaConverter lays out xlm-roberta-base's tokenizer.json: the fairseq
specials <s> <pad> </s> <unk> at ids 0-3, <mask> last, a Metaspace pre-tokenizer (prepend
always, split), the template <s> $A </s> (pair <s> $A </s> </s> $B </s>). The real normalizer is
SentencePiece's precompiled nmt_nfkc charsmap (~240 KB; package tokenize tests Precompiled on
its own fixture): NFKC stands for it here, followed by a Replace of runs of spaces, to keep the
fixture small. That layout, as checkpoints saved before transformers 5 carry it, is
testdata/legacy/tokenizer.json, with the ids the tokenizers library gives.

The model directory's tokenizer is what sentence-transformers 6 / transformers 5 save for it:
transformers 5's XLMRobertaTokenizer rebuilds the pipeline from its class (a Precompiled
normalizer only when the checkpoint has one, pre-tokenizers WhitespaceSplit then Metaspace, the
same template), so testdata/tiny/tokenizer.json is that, and its ids are sentence-transformers'.

The model: hidden 32, 2 layers, 2 heads, intermediate 37, max_position_embeddings 64 (62
tokens after RoBERTa's position offset), type_vocab_size 1; weights drawn larger than
initializer_range so every layer matters numerically. max_seq_length 24 truncates the long
text.

The Unigram trainer's scores differ in their last bits from run to run (summation order), which
can reorder the vocabulary: rerunning rewrites every file consistently, but not byte for byte.

Outputs, in testdata/: tiny/ (the sentence-transformers directory) and expected.json: texts,
max_seq_length, per text the ids sentence-transformers feeds the model, its embeddings
(SentenceTransformer.encode, float32), and for a right-padded batch of those ids
transformers' last_hidden_state and the position ids XLMRobertaEmbeddings uses.
"""
import json, math, os, shutil, tempfile
import torch
from tokenizers import Tokenizer, Regex, models, trainers, normalizers, pre_tokenizers, processors, decoders
from transformers import XLMRobertaConfig, XLMRobertaModel, PreTrainedTokenizerFast
from sentence_transformers import SentenceTransformer, models as st_models

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "models", "xlmroberta", "testdata")
MAX_SEQ = 24

CORPUS = [
    "Find the weather forecast for Paris tomorrow.",
    "Send an email to Bob with the quarterly report attached.",
    "Search the web for recent news about renewable energy.",
    "Create a calendar event for the team meeting on Monday at 10 am.",
    "Translate this paragraph from English into German and French.",
    "List all open pull requests in the repository and summarize them.",
    "Convert 100 US dollars to euros at today's exchange rate.",
    "Read the file config.yaml and return its contents.",
    "Query the database for customers who signed up last week.",
    "Book a table for two at an Italian restaurant tonight.",
    "Wie wird das Wetter morgen in Berlin?",
    "Schicke eine E-Mail an Anna mit dem Bericht im Anhang.",
    "Suche im Internet nach aktuellen Nachrichten über Energie.",
    "Erstelle einen Termin für die Besprechung am Montag um zehn Uhr.",
    "Übersetze diesen Absatz ins Englische und prüfe die Grammatik.",
    "Lies die Datei und gib ihren Inhalt zurück.",
    "Größere Straßen führen über die Brücke zum Bahnhof.",
    "查询明天北京的天气预报。",
    "给张三发送一封带有季度报告附件的电子邮件。",
    "在网上搜索关于可再生能源的最新新闻。",
    "为周一上午十点的团队会议创建日历事件。",
    "读取配置文件并返回其内容。",
    "查询数据库中上周注册的客户。",
    "把这段文字翻译成英文和德文。",
    "列出仓库中所有未合并的拉取请求。",
    "Quel temps fera-t-il demain à Lyon ?",
    "Envoie un courriel à Marie avec le rapport en pièce jointe.",
    "明日の東京の天気を教えてください。",
    "ファイルを読み込んで内容を返してください。",
]

TEXTS = [
    "Find the weather in Paris",                       # English
    "send an e-mail to Bob about the report",          # English, lower case
    "查询明天北京的天气",                                # Chinese
    "给客户发送电子邮件",                                # Chinese, words unseen as a whole
    "Wie wird das Wetter morgen in München?",          # German, umlauts
    "Größe   und  Straße",                             # German, runs of spaces, ß
    " ",                                               # empty-ish: a space only
    "",                                                # empty
    "Search the web for recent news about renewable energy and then translate every "
    "headline into German, French and Chinese before sending it to the whole team",  # truncated
    "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ ①②",                     # NFKC folds it (legacy layout)
    "line one\nline\ttwo ",                            # whitespace other than spaces
]


def train_tokenizer():
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    trainer = trainers.UnigramTrainer(vocab_size=300, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                      unk_token="<unk>", shrinking_factor=0.75, max_piece_length=8)
    tok.train_from_iterator(CORPUS * 3, trainer)
    tok.add_special_tokens(["<mask>"])
    ids = {t: tok.token_to_id(t) for t in ["<s>", "<pad>", "</s>", "<unk>"]}
    assert ids == {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}, ids
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)])
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    return tok


def main():
    torch.manual_seed(20261130)
    tok = train_tokenizer()
    vocab = tok.get_vocab_size()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                   cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
                                   model_max_length=62)
    cfg = XLMRobertaConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=37, hidden_act="gelu", max_position_embeddings=64,
                           type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0,
                           eos_token_id=2)
    m = XLMRobertaModel(cfg, add_pooling_layer=True).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("LayerNorm.weight"):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            elif name.endswith(".bias") or "LayerNorm" in name:
                p.copy_(0.1 * torch.randn_like(p))
            elif p.dim() == 2 and "embeddings" not in name:
                p.copy_(torch.randn_like(p) / math.sqrt(p.shape[1]))
            else:
                p.copy_(0.5 * torch.randn_like(p))

    tiny = os.path.join(OUT, "tiny")
    shutil.rmtree(tiny, ignore_errors=True)
    with tempfile.TemporaryDirectory() as hf:
        m.save_pretrained(hf, safe_serialization=True)
        fast.save_pretrained(hf)
        # The tokenizer class a real XLM-RoBERTa checkpoint names (transformers loads the fast
        # one from tokenizer.json; sentencepiece is not needed).
        tc = json.load(open(os.path.join(hf, "tokenizer_config.json")))
        tc["tokenizer_class"] = "XLMRobertaTokenizer"
        json.dump(tc, open(os.path.join(hf, "tokenizer_config.json"), "w"), indent=2)
        word = st_models.Transformer(hf, max_seq_length=MAX_SEQ)
        pool = st_models.Pooling(word.get_word_embedding_dimension(), pooling_mode="mean")
        st = SentenceTransformer(modules=[word, pool], device="cpu")
        st.save(tiny)
    for junk in ["README.md"]:
        p = os.path.join(tiny, junk)
        if os.path.exists(p):
            os.remove(p)

    # Reload as a user would, and take the references from the saved directory.
    st = SentenceTransformer(tiny, device="cpu")
    feats = [st.tokenize([t]) for t in TEXTS]
    ids = [f["input_ids"][0].tolist() for f in feats]
    emb = st.encode(TEXTS, batch_size=len(TEXTS), convert_to_numpy=True)
    hfm = st[0].auto_model.eval()
    S = max(len(x) for x in ids)
    pad = cfg.pad_token_id
    batch = torch.full((len(ids), S), pad, dtype=torch.long)
    mask = torch.zeros((len(ids), S), dtype=torch.long)
    for i, x in enumerate(ids):
        batch[i, :len(x)] = torch.tensor(x)
        mask[i, :len(x)] = 1
    with torch.no_grad():
        h = hfm(input_ids=batch, attention_mask=mask).last_hidden_state
        pos = hfm.embeddings.create_position_ids_from_input_ids(batch, pad) if hasattr(hfm.embeddings, "create_position_ids_from_input_ids") else None
    if pos is None:
        from transformers.models.xlm_roberta.modeling_xlm_roberta import create_position_ids_from_input_ids
        pos = create_position_ids_from_input_ids(batch, pad)
    pair = st.tokenizer("find a tool", "查询天气")
    # The layout of checkpoints saved before transformers 5 (see the docstring).
    legacy_dir = os.path.join(OUT, "legacy")
    os.makedirs(legacy_dir, exist_ok=True)
    tok.save(os.path.join(legacy_dir, "tokenizer.json"))
    legacy = Tokenizer.from_file(os.path.join(legacy_dir, "tokenizer.json"))
    legacy.enable_truncation(MAX_SEQ)
    legacy_ids = [legacy.encode(t).ids for t in TEXTS]
    legacy.no_truncation()
    legacy_pair = legacy.encode("find a tool", "查询天气").ids
    # The saved tokenizer.json alone (the tokenizers library) gives sentence-transformers' ids.
    saved = Tokenizer.from_file(os.path.join(tiny, "tokenizer.json"))
    saved.enable_truncation(MAX_SEQ)
    assert [saved.encode(t).ids for t in TEXTS] == ids, "tokenizer.json and sentence-transformers disagree"
    import transformers, sentence_transformers, tokenizers
    json.dump({
        "versions": {"transformers": transformers.__version__, "sentence_transformers": sentence_transformers.__version__,
                     "tokenizers": tokenizers.__version__, "torch": torch.__version__},
        "texts": TEXTS, "max_seq_length": MAX_SEQ, "ids": ids,
        "pair": {"a": "find a tool", "b": "查询天气", "ids": pair["input_ids"]},
        "legacy": {"ids": legacy_ids, "pair_ids": legacy_pair},
        "embeddings": [[float(v) for v in row] for row in emb],
        "batch_ids": batch.tolist(), "batch_mask": mask.tolist(), "positions": pos.tolist(),
        "hidden_shape": list(h.shape), "last_hidden_state": [float(f"{float(v):.8g}") for v in h.flatten()],
    }, open(os.path.join(OUT, "expected.json"), "w"))
    print("wrote", OUT, "vocab", vocab)


if __name__ == "__main__":
    main()
