#!/usr/bin/env python3
"""Writes tokenize/testdata/bpe/: small BPE tokenizers trained offline with the tokenizers
library in the layouts of three model families, and the ids the tokenizers library gives for a
set of texts (package tokenize's BPE parity tests compare them exactly).

    ~/.cache/toolret/venv/bin/python scripts/parity/make_bpe_fixture.py

Nothing is downloaded. Layouts (as the real tokenizer.json files carry them):

  qwen3/      Qwen2/Qwen3: NFC normalizer; pre-tokenizers Split(the Qwen2 regex, Isolated) then
              ByteLevel(add_prefix_space false, use_regex false); byte-level BPE with
              ignore_merges false; added tokens <|endoftext|>, <|im_start|>, <|im_end|> after
              the vocabulary; post-processor TemplateProcessing "$A <|endoftext|>" (as
              Qwen3-Embedding's), merges written as ["a", "b"] lists.
  modernbert/ ModernBERT (GPT-NeoX/OLMo style): NFC normalizer; ByteLevel pre-tokenizer with
              use_regex (the GPT-2 regex) and add_prefix_space false; [CLS] $A [SEP] template;
              specials [UNK] [CLS] [SEP] [PAD] [MASK] with lstrip on [MASK]; merges as "a b"
              strings.
  gpt2/       GPT-2/RoBERTa style: ByteLevel(add_prefix_space true), RobertaProcessing
              <s> $A </s>, ignore_merges true.
  gemma/      Gemma3 (SentencePiece BPE): normalizer Replace(" " -> "▁"), Split(" ",
              MergedWithPrevious) pre-tokenizer, BPE with byte_fallback (<0x00>..<0xFF>) and
              fuse_unk, template "<bos> $A <eos>" (EmbeddingGemma's).

Each directory holds tokenizer.json and ids.json: [{"text", "ids" (with the template),
"tokens", "pretokens" (the pre-tokenizer's pieces of the normalized text, no added tokens
split out)}].
"""
import json, os
from tokenizers import Tokenizer, Regex, models, trainers, normalizers, pre_tokenizers, processors, decoders, AddedToken

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tokenize", "testdata", "bpe")

QWEN_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""

CORPUS = [
    "Find the weather forecast for Paris tomorrow.",
    "Send an email to Bob with the quarterly report attached.",
    "Search the web for recent news about renewable energy.",
    "Create a calendar event for the team meeting on Monday at 10 am.",
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; i++) { sum += x[i]; }",
    "if err != nil {\n\treturn fmt.Errorf(\"read %s: %w\", path, err)\n}",
    "The price is $1,234.56 (about 1234 euros) -- 50% off!!!",
    "Wie wird das Wetter morgen in München? Größere Straßen führen über die Brücke.",
    "查询明天北京的天气预报。给张三发送一封带有季度报告附件的电子邮件。",
    "I'm sure they'll say it's fine; we've done what you'd expect.",
    "Emoji: 😀 🎉 👍🏽 and more 🚀🚀",
    "   leading spaces and trailing   ",
    "tabs\tand\nnewlines\r\nmixed  \n\n  here",
] * 4

TEXTS = [
    "Find the weather in Paris",
    "send an e-mail to Bob about the report",
    "def add(a, b):\n    return a + b\n",
    "if x != nil {\n\treturn fmt.Errorf(\"read %s: %w\", p, err)\n}",
    "Prices: $1,234.56, 12345678 and 3.14159 -- 50%!!!",
    "multiple   spaces    between     words",
    "   leading and trailing   ",
    "line one\nline two\r\n\n\nthree",
    "a\n\n  b\t\t c \u3000d\u00a0e\u2003f",
    "Emoji 😀🎉 👍🏽 done 🚀",
    "查询明天北京的天气",
    "Wie wird das Wetter morgen in München? Größe und Straße, ÄÖÜ",
    "I'm here, you're there, it's OK; WE'LL SEE, she'D know",
    "text with <|endoftext|> inside and <|im_start|>user\nhi<|im_end|>",
    "[CLS] masked [MASK] token and [SEP] in text",
    "a [MASK] b  [MASK]c",
    "<s> hello </s> <mask> world",
    "<bos>gemma <eos> text <pad>",
    "Cafe\u0301 vs Café (NFC)",
    "",
    " ",
    "x",
    "\u00a0\u00a0z",
    "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
    "ǅemo ǈ Ǳ ꙮ 𝔘𝔫𝔦 ١٢٣ ½ Ⅻ",
    "tab\t\t\tend\t",
    "ends with spaces   ",
    "\n",
    "\r\n  \r\n",
    "it's 'quoted' 's",
    "x \u3000y  \u00a0z\u2028w \u0085v\u000bu\u000cq \u200bp",
    " \u3000!  \u00a0?\t\t1 \u20032",
    "a  1  !  \n  b \u3000\u3000c",
    "ſ's 'S 'LL 'ſ ab'ſ cd'S K'K",
]


def random_texts(n=150, seed=56):
    """Random strings over a pool that stresses the pre-tokenizer regexes: every kind of
    whitespace, letters, digits, punctuation, apostrophes, CJK, emoji, combining marks."""
    import random
    rnd = random.Random(seed)
    pool = list(" \t\n\r\u000b\u000c\u0085\u00a0\u1680\u2000\u2003\u2028\u2029\u202f\u205f\u3000\u200b")
    pool += list("aZéßĳ'sStTdDmlLrvV") + ["'s", "'ll", "'RE", "'t"] + list("0123456789٣½Ⅻ")
    pool += list(".,;:!?-_()[]{}<>\"'#$%&*+/=@\\^`|~") + list("查询天气😀🎉👍🏽\u0301\u200d")
    pool += ["<|endoftext|>", "[MASK]", "[SEP]", " [MASK]", "<mask>", "<bos>", "<0x41>"]
    out = []
    for _ in range(n):
        out.append("".join(rnd.choice(pool) for _ in range(rnd.randint(1, 24))))
    return out


def dump(tok, name, add_special=True):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    tok.save(os.path.join(d, "tokenizer.json"), pretty=True)
    back = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    rows = []
    for t in TEXTS + random_texts():
        e = back.encode(t, add_special_tokens=add_special)
        norm = back.normalizer.normalize_str(t) if back.normalizer else t
        pre = [p for p, _ in back.pre_tokenizer.pre_tokenize_str(norm)] if back.pre_tokenizer else [norm]
        rows.append({"text": t, "ids": e.ids, "tokens": e.tokens, "pretokens": pre})
    with open(os.path.join(d, "ids.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, ensure_ascii=False, indent=1)


def qwen3():
    tok = Tokenizer(models.BPE(ignore_merges=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True, normalized=False),
                            AddedToken("<|im_start|>", special=True, normalized=False),
                            AddedToken("<|im_end|>", special=True, normalized=False)])
    eot = tok.token_to_id("<|endoftext|>")
    tok.post_processor = processors.TemplateProcessing(
        single="$A:0 <|endoftext|>:0", pair="$A:0 <|endoftext|>:0 $B:1 <|endoftext|>:1",
        special_tokens=[("<|endoftext|>", eot)])
    dump(tok, "qwen3")
    # Qwen2's real files write merges as ["a", "b"]; the library writes whichever its version
    # does: make this file use lists, the ModernBERT one strings.
    set_merges_form(os.path.join(OUT, "qwen3", "tokenizer.json"), lists=True)


def modernbert():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["|||IP_ADDRESS|||", "<|padding|>"], show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    tok.add_special_tokens([AddedToken("[UNK]", special=True, normalized=False),
                            AddedToken("[CLS]", special=True, normalized=False),
                            AddedToken("[SEP]", special=True, normalized=False),
                            AddedToken("[PAD]", special=True, normalized=False),
                            AddedToken("[MASK]", special=True, normalized=False, lstrip=True)])
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    dump(tok, "modernbert")
    set_merges_form(os.path.join(OUT, "modernbert", "tokenizer.json"), lists=False)


def gpt2():
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=500, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<s>", "<pad>", "</s>", "<unk>"], show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    tok.add_special_tokens([AddedToken("<mask>", special=True, lstrip=True, normalized=False)])
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    dump(tok, "gpt2")


def gemma():
    # Train on the normalized text, then rebuild the model with the byte tokens and
    # byte_fallback, as Gemma's tokenizer.json has them.
    t0 = Tokenizer(models.BPE(unk_token="<unk>"))
    t0.normalizer = normalizers.Replace(" ", "\u2581")
    t0.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous")
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>", "<eos>", "<bos>", "<unk>"],
                                  show_progress=False, limit_alphabet=120)
    t0.train_from_iterator(CORPUS, trainer)
    j = json.loads(t0.to_str())
    vocab = j["model"]["vocab"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in j["model"]["merges"]]
    # Byte tokens right after the specials, the learnt tokens after them (ids shift).
    order = sorted(vocab, key=vocab.get)
    specials, rest = order[:4], order[4:]
    new = {}
    for t in specials:
        new[t] = len(new)
    for b in range(256):
        new["<0x%02X>" % b] = len(new)
    for t in rest:
        if t not in new:
            new[t] = len(new)
    tok = Tokenizer(models.BPE(vocab=new, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous")
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    tok.add_special_tokens([AddedToken("<start_of_turn>", special=True, normalized=False)])
    tok.post_processor = processors.TemplateProcessing(
        single="<bos>:0 $A:0 <eos>:0", pair="<bos>:0 $A:0 <eos>:0 <bos>:1 $B:1 <eos>:1",
        special_tokens=[("<bos>", new["<bos>"]), ("<eos>", new["<eos>"])])
    dump(tok, "gemma")


def set_merges_form(path, lists):
    j = json.load(open(path, encoding="utf-8"))
    ms = j["model"]["merges"]
    out = []
    for m in ms:
        pair = m.split(" ") if isinstance(m, str) else m
        out.append(list(pair) if lists else " ".join(pair))
    j["model"]["merges"] = out
    with open(path, "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False, indent=1)
    # The rewritten file must give the same ids.
    back = Tokenizer.from_file(path)
    rows = json.load(open(os.path.join(os.path.dirname(path), "ids.json"), encoding="utf-8"))
    for r in rows:
        assert back.encode(r["text"]).ids == r["ids"], r["text"]


if __name__ == "__main__":
    qwen3()
    modernbert()
    gpt2()
    gemma()
