#!/usr/bin/python3
"""Unigram tokenizer parity fixture, part 1: sentencepiece.

Trains a small SentencePiece Unigram model (nmt_nfkc, 2000 pieces, DeBERTa-v3's special
ids [PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3, [MASK] added after the vocabulary as DeBERTa-v3's
added_tokens.json does) on ToolLens texts, picks >= 300 test texts (ToolLens queries and
tool texts plus hand-written edge cases) and records Debian's sentencepiece ids for them.

Run with Debian's python (it has the sentencepiece module), from the repository root:

    /usr/bin/python3 scripts/unigram/make_fixture.py

Writes tokenize/testdata/unigram/{spm.model, added_tokens.json, tokenizer_config.json,
texts.json, spm_ids.json}. Part 2 (tokenizer.json and HF ids) is hf_fixture.mjs.
"""
import json
import os
import random
import subprocess
import sys

import sentencepiece as spm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "datasets", "toollens")
OUT = os.path.join(ROOT, "tokenize", "testdata", "unigram")


def texts_of(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


queries, tools = texts_of("queries.jsonl"), texts_of("corpus.jsonl")

# A little non-ASCII text so the vocabulary has accented, CJK and Cyrillic pieces (their
# characters are covered; characters absent here become [UNK]).
SEED = [
    "café crème déjà vu naïve façade résumé à la carte",
    "Zürich München Köln Straße größer",
    "São Paulo ação informação não",
    "東京の天気を教えて 東京 天気 京都",
    "北京 上海 天气 中文",
    "Привет мир как дела погода",
    "Ελληνικά γράμματα καιρός",
]

HAND = [
    "", " ", "  ", "\t", "\n", " \t\n\r ", "\u3000", "\u00a0",
    "Hello, World!", "hello world", "  leading spaces", "trailing spaces   ", "  both  ",
    "runs    of     spaces", "tabs\tand\ttabs", "new\nline", "carriage\r\nreturn", "mixed \t \n  \r\n whitespace",
    "\t\tleading tabs", "trailing newline\n", "\n\nleading newlines",
    "Café déjà vu — naïve façade", "Crème brûlée à la Zürich", "ÅNGSTRÖM São Paulo", "cafe\u0301 decomposed e\u0301",
    "東京の天気を教えて", "北京烤鸭 recipe", "한국어 번역 please", "Привет, как дела?", "مرحبا بالعالم", "Ελληνικά γράμματα",
    "ＡＢＣ　ｄｅｆ１２３！", "２０２４年 full-width", "ﾃｽﾄ half-width ｶﾞｷﾞ", "ｶﾞ", "①②③ circled", "x² + y³ = z¹", "ﬁ ligature ﬂ", "Ⅻ roman numeral",
    "㍿ ㌔ squared", "™ © ®", "½ ¼ ¾", "µ micro", "Å angstrom sign", "…ellipsis…", "‘curly’ “quotes”", "«guillemets»",
    "I ❤️ emoji 🚀🔥 tests 👩‍💻", "flags 🇵🇹🇯🇵", "👍🏽 thumbs", "smile :-) ;) <3",
    "null\u0000char", "bell\u0007char", "del\u007fchar", "\u0001leading control", "trailing control\u0002", "\u0085next line",
    "zero\u200bwidth space", "zero\u200cwidth non-joiner", "soft\u00adhyphen", "bom\ufeffinside", "\ufeffleading bom",
    "word\u2028line separator", "para\u2029separator", "rtl\u200fmark", "x\ue000y private", "a\u0378b unassigned",
    "\u200b", "\u0001", "\u0001 \u0002", " \u200b hello", "\u2581 lower block", "a\u2581b",
    "İstanbul ıi", "ΟΔΟΣ ΣΑΣ", "straße STRASSE", "ß ẞ", "Ωmega ω Ω", "∑ math ∫ symbols ≤ ≥",
    "https://example.com/api/v1/weather?city=Lisbon&units=metric", "email me at jane.doe@example.com",
    "C++ & C# vs. Go (1.27)", "$100.50 + 20% = ?", "price: €1,299.99 / £999", "123456789 3.14159 1e-9",
    "...!!!???", "@#$%^&*()_+{}|:<>?", "snake_case and kebab-case", "CamelCaseWord", "UPPER lower MiXeD",
    "supercalifragilisticexpialidocious", "pneumonoultramicroscopicsilicovolcanoconiosis is long",
    "a" * 300, "xyzzy" * 80, "Ω" * 200, "東" * 150, "word " * 120,
    "``double backticks'' and ''quotes''", "don't won't can't",
    "[CLS] literal [SEP] tokens [MASK]", "[PAD][UNK]", "<s> </s> <unk>", "▁▁ already escaped ▁",
    # A grapheme shorter than 6 bytes whose first character has a rule: HF tokenizers'
    # Precompiled replaces the whole grapheme with that rule (dropping the accent).
    "Ａ\u0301", "ﬁ\u0301 ligature accent", "①\u0301 circled accent", "\u200b\u0301x", "ｶ\u3099 kana voicing",
    # Equal-score segmentations ("0" "00" vs "00" "0"): ties are broken by float rounding.
    "000", "0000", "00000 000000 0000000", "15'000 and 2'000'000", "1000000 100000000", "......... ------ ======",
    "1111 2222 3333 11111111", "aaaaaaa bbbbbbb", "ababababab", "sssssss", "eeeeeeeee",
]


def main():
    os.makedirs(OUT, exist_ok=True)
    # A fixed scratch path: spm_train records its input and output paths in the model.
    tmp = "/tmp/toolret-unigram-fixture"
    os.makedirs(tmp, exist_ok=True)
    if True:
        train = os.path.join(tmp, "train.txt")
        with open(train, "w", encoding="utf-8") as f:
            for t in tools + queries + SEED * 20:
                f.write(t.replace("\n", " ") + "\n")
        prefix = os.path.join(tmp, "spm")
        subprocess.run([
            "spm_train", "--input=" + train, "--model_prefix=" + prefix, "--model_type=unigram",
            "--vocab_size=2000", "--normalization_rule_name=nmt_nfkc", "--character_coverage=1.0",
            "--pad_id=0", "--bos_id=1", "--eos_id=2", "--unk_id=3",
            "--pad_piece=[PAD]", "--bos_piece=[CLS]", "--eos_piece=[SEP]", "--unk_piece=[UNK]",
            "--num_threads=1", "--shuffle_input_sentence=false", "--minloglevel=2",
        ], check=True)
        with open(prefix + ".model", "rb") as f:
            model = f.read()
    with open(os.path.join(OUT, "spm.model"), "wb") as f:
        f.write(model)

    sp = spm.SentencePieceProcessor(model_proto=model)
    n = sp.get_piece_size()
    want = {0: "[PAD]", 1: "[CLS]", 2: "[SEP]", 3: "[UNK]"}
    for i, p in want.items():
        if sp.id_to_piece(i) != p:
            sys.exit(f"piece {i} is {sp.id_to_piece(i)!r}, want {p!r}")
    with open(os.path.join(OUT, "added_tokens.json"), "w") as f:
        json.dump({"[MASK]": n}, f)
    cfg = {"do_lower_case": False, "vocab_type": "spm", "split_by_punct": False, "bos_token": "[CLS]",
           "eos_token": "[SEP]", "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
           "cls_token": "[CLS]", "mask_token": "[MASK]", "tokenizer_class": "DebertaV2Tokenizer"}
    with open(os.path.join(OUT, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)

    rng = random.Random(7)
    texts = HAND + rng.sample(queries, 160) + rng.sample(tools, 70)
    pairs = [[q, t] for q, t in zip(rng.sample(queries, 20), rng.sample(tools, 20))]
    pairs += [["short", "also short"], ["", "only second"], ["only first", ""], ["Café", "東京"], ["  a  ", "\tb\n"]]
    with open(os.path.join(OUT, "texts.json"), "w", encoding="utf-8") as f:
        json.dump({"texts": texts, "pairs": pairs}, f, ensure_ascii=False, indent=0)
    out = {
        "generator": f"sentencepiece {spm.__version__} (python module, Debian); spm_train unigram nmt_nfkc vocab 2000",
        "ids": [sp.encode(t) for t in texts],
    }
    with open(os.path.join(OUT, "spm_ids.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
    print(f"{n} pieces; {len(texts)} texts, {len(pairs)} pairs -> {OUT}")


if __name__ == "__main__":
    main()
