package tokenize

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func testTokenizer(t *testing.T) *Tokenizer {
	t.Helper()
	tok, err := New([]string{PAD, UNK, CLS, SEP, MASK, "hello", "world", ",", "!", "un", "##aff", "##able", "cafe", "東", "京", "x", "##x"}, true)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestEncode(t *testing.T) {
	tok := testTokenizer(t)
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"Hello, World!", []string{"hello", ",", "world", "!"}},
		{"unaffable", []string{"un", "##aff", "##able"}},
		{"Café", []string{"cafe"}},                // accents stripped when lowercasing
		{"東京", []string{"東", "京"}},                // CJK characters are words of their own
		{"unknownword", []string{UNK}},            // a missing piece makes the whole word [UNK]
		{strings.Repeat("x", 100), nil},           // 100 chars: x ##x ... (checked below)
		{strings.Repeat("x", 101), []string{UNK}}, // over max_input_chars_per_word
		{"  \t\n", []string{}},
		{"hello\u0000world", []string{UNK}}, // NUL removed: "helloworld" is one unknown word
		{"[SEP] hello", []string{SEP, "hello"}},
	} {
		got := tok.Tokens(tc.text)
		if tc.want == nil {
			if len(got) != 100 || got[0] != "x" || got[99] != "##x" {
				t.Errorf("%q: %v", tc.text[:10], got[:3])
			}
			continue
		}
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Tokens(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestSinglePairPadBucket(t *testing.T) {
	tok := testTokenizer(t)
	if got := tok.Single("hello world hello world", 4); !reflect.DeepEqual(got, []int32{2, 5, 6, 3}) {
		t.Errorf("Single truncated = %v", got)
	}
	ids, types := tok.Pair("hello world hello", "world", 6)
	// a = [hello world hello] (3), b = [world] (1), budget 6-3 = 3: drop one from a (the longer).
	if !reflect.DeepEqual(ids, []int32{2, 5, 6, 3, 6, 3}) || !reflect.DeepEqual(types, []int32{0, 0, 0, 0, 1, 1}) {
		t.Errorf("Pair = %v %v", ids, types)
	}
	// Tie (2 and 2, budget 3): removes from the second sequence first.
	ids, _ = tok.Pair("hello world", "world hello", 6)
	if !reflect.DeepEqual(ids, []int32{2, 5, 6, 3, 6, 3}) {
		t.Errorf("Pair tie = %v", ids)
	}
	if id, ok := tok.ID("world"); !ok || id != 6 || tok.Token(6) != "world" || tok.Token(99) != "" || tok.MaskID() != 4 {
		t.Errorf("ID/Token/MaskID: %d %v %q", id, ok, tok.Token(6))
	}
	b := tok.Pad([][]int32{tok.Single("hello", 64), tok.Single("hello world , hello world !", 64)}, nil, 64)
	if b.Len != 8 || len(b.IDs[0]) != 8 || b.Mask[0][2] != 1 || b.Mask[0][3] != 0 || b.IDs[0][3] != tok.PadID() {
		t.Errorf("batch %+v", b)
	}
}

func TestVocabErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content, want string
	}{
		{"empty", "", "empty vocabulary"},
		{"duplicate", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nhello\n", "vocab.txt:6: duplicate token \"hello\""},
		{"blank line", "[PAD]\n\n[UNK]\n", "vocab.txt:2: empty token"},
		{"no sep", "[PAD]\n[UNK]\n[CLS]\nhello\n", "no [SEP] token"},
	} {
		p := filepath.Join(dir, "vocab.txt")
		os.WriteFile(p, []byte(tc.content), 0o644)
		_, err := FromVocab(p, true)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	tok := testTokenizer(t)
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	for _, load := range []func() (*Tokenizer, error){
		func() (*Tokenizer, error) { return Load(dir) },
		func() (*Tokenizer, error) { os.Remove(filepath.Join(dir, "tokenizer.json")); return Load(dir) },
	} {
		got, err := load()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Vocab(), tok.Vocab()) || !reflect.DeepEqual(got.Tokens("Unaffable Café!"), tok.Tokens("Unaffable Café!")) {
			t.Fatal("reloaded tokenizer differs")
		}
	}
}

func TestBuildVocab(t *testing.T) {
	texts := []string{"Find a flight to Lisbon", "find flights from Boston", "weather in Lisbon tomorrow", "Flight status of BA117", "the weather forecast"}
	var many []string
	for i := 0; i < 50; i++ {
		many = append(many, texts...)
	}
	start := time.Now()
	vocab, err := BuildVocab(many, 80, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(vocab) > 80 || vocab[0] != PAD || vocab[3] != SEP {
		t.Fatalf("vocab %v", vocab)
	}
	tok, err := New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	unk := 0
	for _, s := range texts {
		for _, id := range tok.Encode(s) {
			if id == tok.UNKID() {
				unk++
			}
		}
	}
	if unk != 0 {
		t.Errorf("%d [UNK] on training texts", unk)
	}
	if got := tok.Tokens("flight"); len(got) > 2 {
		t.Errorf("frequent word 'flight' split into %v", got)
	}
	again, _ := BuildVocab(many, 80, 2, true)
	if !reflect.DeepEqual(again, vocab) {
		t.Error("BuildVocab is not deterministic")
	}
	t.Logf("vocab of %d built in %v", len(vocab), time.Since(start))
}

func FuzzEncode(f *testing.F) {
	for _, s := range []string{"Hello, World!", "東京 café", "[SEP]x", "\x00\xff", strings.Repeat("x", 120)} {
		f.Add(s)
	}
	tok, err := New([]string{PAD, UNK, CLS, SEP, MASK, "hello", "x", "##x", "##"}, true)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, id := range tok.Single(s, 16) {
			if id < 0 || int(id) >= tok.VocabSize() {
				t.Fatalf("id %d out of range", id)
			}
		}
		if ids := tok.Single(s, 16); len(ids) > 16 {
			t.Fatalf("%d ids > 16", len(ids))
		}
		ids, types := tok.Pair(s, s+"x", 8)
		if len(ids) > 8 || len(ids) != len(types) || ids[0] != tok.CLSID() || ids[len(ids)-1] != tok.SEPID() {
			t.Fatalf("Pair: %v %v", ids, types)
		}
		for i, ty := range types {
			if ty != 0 && ty != 1 || i > 0 && ty < types[i-1] {
				t.Fatalf("Pair types %v", types)
			}
		}
		bb := tok.Pad([][]int32{tok.Single(s, 16), tok.Single("", 16), tok.Single(s+s, 16)}, nil, 16)
		for _, row := range bb.IDs {
			if len(row) != bb.Len || bb.Len > 16 {
				t.Fatalf("batch row %v, Len %d", row, bb.Len)
			}
		}
	})
}
