package tokenize

import (
	"encoding/base64"
	"testing"
)

func checkIDs(t *testing.T, ids []int32, n int) {
	t.Helper()
	for _, id := range ids {
		if id < 0 || int(id) >= n {
			t.Fatalf("id %d outside [0, %d): %v", id, n, ids)
		}
	}
}

var fuzzTexts = []string{"", "ab a b", "  Ａ\tｂ  ", "<x>zz 000 ①\u0301", "qq\x01\xff\u200b x", "[CLS] a [SEP] b [MASK]"}

// FuzzSPModel decodes arbitrary bytes as an spm.model and, when that succeeds, tokenizes a
// text with it: no panic, every id a piece.
func FuzzSPModel(f *testing.F) {
	good := buildSPModel(tinyPieces, 1, buildCharsmap(tinyRules))
	for i, s := range fuzzTexts {
		f.Add(good, s)
		f.Add(good[:len(good)*i/len(fuzzTexts)], s)
	}
	f.Add(buildSPModel(tinyPieces, 1, nil), "a b")
	f.Fuzz(func(t *testing.T, model []byte, text string) {
		m, err := parseSPModel(model)
		if err != nil {
			return
		}
		u, err := newUnigramSPM(m)
		if err != nil {
			return
		}
		checkIDs(t, u.encode(text, nil), len(u.pieces))
	})
}

// FuzzTokenizerJSONUnigram parses arbitrary bytes as a Unigram tokenizer.json and, when that
// succeeds, encodes a text as a single and as a pair: no panic, every id in the vocabulary.
// The seeds are small and built here (a charsmap of two rules, no Load and Save): each new
// input the fuzzer finds is minimised byte by byte; make fuzz bounds that minimisation.
func FuzzTokenizerJSONUnigram(f *testing.F) {
	// A Precompiled normalizer (SentencePiece's charsmap, base64) and added tokens, as
	// Save writes them, in a few hundred bytes.
	charsmap := base64.StdEncoding.EncodeToString(buildCharsmap(map[string]string{"Ａ": "A", "\u200b": ""}))
	pre := []byte(`{"added_tokens":[{"id":4,"content":"[MASK]","normalized":false,"special":true}],` +
		`"model":{"type":"Unigram","unk_id":0,"vocab":[["[UNK]",0],["[PAD]",0],["[CLS]",0],["[SEP]",0],["[MASK]",0],["▁",-2],["a",-3],["▁a",-2.5],["A",-4]]},` +
		`"normalizer":{"type":"Sequence","normalizers":[{"type":"Precompiled","precompiled_charsmap":"` + charsmap + `"},{"type":"Strip","strip_left":false,"strip_right":true}]},` +
		`"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true},` +
		`"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"[CLS]","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"[SEP]","type_id":0}}],` +
		`"pair":[{"SpecialToken":{"id":"[CLS]","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"[SEP]","type_id":0}},{"Sequence":{"id":"B","type_id":1}},{"SpecialToken":{"id":"[SEP]","type_id":1}}],` +
		`"special_tokens":{"[CLS]":{"id":"[CLS]","ids":[2],"tokens":["[CLS]"]},"[SEP]":{"id":"[SEP]","ids":[3],"tokens":["[SEP]"]}}}}`)
	if _, err := parseJSON("pre", pre); err != nil {
		f.Fatal(err)
	}
	f.Add(pre, fuzzTexts[2])
	f.Add(pre, fuzzTexts[5])
	small := []byte(`{"model":{"type":"Unigram","unk_id":0,"vocab":[["[UNK]",0],["[PAD]",0],["[CLS]",0],["[SEP]",0],["▁a",-1]]},` +
		`"normalizer":{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"},{"type":"Replace","pattern":{"String":"a"},"content":"b"}]},` +
		`"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Punctuation","behavior":"Isolated"},{"type":"Metaspace","replacement":"▁","add_prefix_space":true}]},` +
		`"post_processor":{"type":"BertProcessing","cls":["[CLS]",2],"sep":["[SEP]",3]}}`)
	if _, err := parseJSON("small", small); err != nil {
		f.Fatal(err)
	}
	f.Add(small, "A, a.")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tok, err := parseJSON("tokenizer.json", data)
		if err != nil {
			return
		}
		n := tok.VocabSize()
		checkIDs(t, tok.Single(text, 0), n)
		ids, types := tok.Pair(text, text, 16)
		checkIDs(t, ids, n)
		if len(ids) != len(types) || len(ids) > 16 {
			t.Fatalf("Pair: %d ids, %d types (max 16)", len(ids), len(types))
		}
	})
}
