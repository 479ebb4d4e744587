package tokenize

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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
func FuzzTokenizerJSONUnigram(f *testing.F) {
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spm.model"), buildSPModel(tinyPieces, 1, buildCharsmap(tinyRules)), 0o644); err != nil {
		f.Fatal(err)
	}
	tok, err := Load(dir)
	if err != nil {
		f.Fatal(err)
	}
	out := f.TempDir()
	if err := tok.Save(out); err != nil {
		f.Fatal(err)
	}
	pretty, err := os.ReadFile(filepath.Join(out, "tokenizer.json"))
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, pretty); err != nil {
		f.Fatal(err)
	}
	seed := buf.Bytes()
	for _, s := range fuzzTexts {
		f.Add(seed, s)
	}
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
