package tokenize

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The Unigram fixture (tokenize/testdata/unigram, README.md there): a 2000-piece nmt_nfkc
// spm.model trained on ToolLens, >= 300 texts, and the ids of sentencepiece, HF tokenizers
// and transformers.js for them.
const uniDir = "testdata/unigram"

type uniTexts struct {
	Texts []string    `json:"texts"`
	Pairs [][2]string `json:"pairs"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func uniFixture(t *testing.T) uniTexts {
	t.Helper()
	var x uniTexts
	readJSON(t, filepath.Join(uniDir, "texts.json"), &x)
	if len(x.Texts) < 300 {
		t.Fatalf("%d texts, want >= 300", len(x.Texts))
	}
	return x
}

func loadUni(t *testing.T, dir string, hf bool) *Tokenizer {
	t.Helper()
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tok.uni == nil || tok.uni.hf != hf {
		t.Fatalf("Load(%s): not a Unigram tokenizer with hf=%v", dir, hf)
	}
	return tok
}

// TestUnigramSentencePieceParity compares the spm.model tokenizer's ids with Debian's
// sentencepiece (scripts/unigram/make_fixture.py) on every fixture text, exactly, with no
// exception. Text is given to the segmenter whole (sentencepiece does not split on
// "[CLS]" written in the text; Encode does, see TestUnigramSpecials).
func TestUnigramSentencePieceParity(t *testing.T) {
	x := uniFixture(t)
	var want struct {
		Generator string    `json:"generator"`
		IDs       [][]int32 `json:"ids"`
	}
	readJSON(t, filepath.Join(uniDir, "spm_ids.json"), &want)
	if len(want.IDs) != len(x.Texts) {
		t.Fatalf("%d expected id lists for %d texts", len(want.IDs), len(x.Texts))
	}
	tok := loadUni(t, uniDir, false)
	bad := 0
	for i, text := range x.Texts {
		got := tok.uni.encode(text, nil)
		if !slices.Equal(got, want.IDs[i]) {
			bad++
			t.Errorf("text %d %q:\n got %v\nwant %v", i, text, got, want.IDs[i])
		}
	}
	t.Logf("%d/%d texts identical to %s", len(x.Texts)-bad, len(x.Texts), want.Generator)
}

type hfIDs struct {
	Generator string `json:"generator"`
	Singles   []struct {
		Rust []int32 `json:"rust"`
		JS   []int32 `json:"js"`
	} `json:"singles"`
	Pairs []struct {
		Rust      []int32 `json:"rust"`
		RustTypes []int32 `json:"rust_types"`
		JS        []int32 `json:"js"`
		JSTypes   []int32 `json:"js_types"`
	} `json:"pairs"`
}

// jsExceptions are the fixture texts on which transformers.js 3.x differs from HF
// tokenizers (and toolret). Its Precompiled normalizer does not read the charsmap: it
// removes a fixed set of control characters, maps a fixed set (U+2000-U+200F among them) to
// a space and applies NFKC to the whole string.
var jsExceptions = map[string]string{
	"I ❤️ emoji 🚀🔥 tests 👩\u200d💻": "transformers.js maps U+200D (ZWJ) to a space; nmt_nfkc keeps it, so 👩\u200d💻 is one fused [UNK]",
	"\u0085next line":         "transformers.js keeps U+0085 (NEL); HF's Strip removes it (Rust whitespace)",
	"Ａ\u0301":                 "HF replaces the short grapheme Ａ+U+0301 by Ａ's rule (A); transformers.js's NFKC gives Á",
	"ﬁ\u0301 ligature accent": "HF replaces the grapheme ﬁ+U+0301 by ﬁ's rule (fi); transformers.js's NFKC keeps the accent",
	"①\u0301 circled accent":  "HF replaces the grapheme ①+U+0301 by ①'s rule (1); transformers.js's NFKC keeps the accent",
}

// TestUnigramHFParity compares the tokenizer.json path (Single and Pair, with [CLS]/[SEP])
// with HF tokenizers (Rust), exactly, and with transformers.js, except on jsExceptions.
func TestUnigramHFParity(t *testing.T) {
	x := uniFixture(t)
	var want hfIDs
	readJSON(t, filepath.Join(uniDir, "hf_ids.json"), &want)
	if len(want.Singles) != len(x.Texts) || len(want.Pairs) != len(x.Pairs) {
		t.Fatalf("hf_ids.json has %d singles and %d pairs for %d texts and %d pairs", len(want.Singles), len(want.Pairs), len(x.Texts), len(x.Pairs))
	}
	tok := loadUni(t, filepath.Join(uniDir, "hf"), true)
	rustBad, jsBad := 0, 0
	for i, text := range x.Texts {
		got := tok.Single(text, 0)
		if w := want.Singles[i].Rust; !slices.Equal(got, w) {
			rustBad++
			t.Errorf("text %d %q: tokenizers (Rust):\n got %v\nwant %v", i, text, got, w)
		}
		why, listed := jsExceptions[text]
		switch same := slices.Equal(got, want.Singles[i].JS); {
		case !same && !listed:
			t.Errorf("text %d %q: transformers.js:\n got %v\nwant %v", i, text, got, want.Singles[i].JS)
		case same && listed:
			t.Errorf("text %d %q is listed in jsExceptions but matches transformers.js", i, text)
		case !same:
			jsBad++
			t.Logf("transformers.js exception %q: %s", text, why)
		}
	}
	for i, p := range x.Pairs {
		ids, types := tok.Pair(p[0], p[1], 0)
		w := want.Pairs[i]
		if !slices.Equal(ids, w.Rust) || !slices.Equal(types, w.RustTypes) {
			t.Errorf("pair %d (%q, %q): tokenizers (Rust):\n got %v %v\nwant %v %v", i, p[0], p[1], ids, types, w.Rust, w.RustTypes)
		}
		if !slices.Equal(ids, w.JS) || !slices.Equal(types, w.JSTypes) {
			t.Errorf("pair %d (%q, %q): transformers.js:\n got %v %v\nwant %v %v", i, p[0], p[1], ids, types, w.JS, w.JSTypes)
		}
	}
	t.Logf("%s: %d/%d texts identical to tokenizers, %d/%d to transformers.js; %d pairs", want.Generator,
		len(x.Texts)-rustBad, len(x.Texts), len(x.Texts)-jsBad, len(x.Texts), len(x.Pairs))
}

// spmHFDifferences are the fixture texts on which SentencePiece's normalisation (spm.model
// path) and HF tokenizers' (tokenizer.json path, as transformers converts DeBERTa-v3) give
// different ids.
var spmHFDifferences = map[string]string{
	"\u0085next line":         "HF's Strip removes the leading U+0085; nmt_nfkc has no rule for it ([UNK])",
	"\u200b":                  "HF strips before the charsmap maps U+200B to a space, so a lone ▁ remains; SentencePiece strips after",
	"\x01 \x02":               "as U+200B: the charsmap removes the controls after HF's Strip, leaving a space (▁)",
	"▁▁ already escaped ▁":    "the trailing U+2581 becomes a space after HF's Strip (▁ kept); SentencePiece strips it",
	"Ａ\u0301":                 "HF's grapheme rule maps Ａ+U+0301 to A; SentencePiece's longest match has a rule for the pair (Á)",
	"ﬁ\u0301 ligature accent": "HF's grapheme rule drops the accent after ﬁ",
	"①\u0301 circled accent":  "HF's grapheme rule drops the accent after ①",
	"00000 000000 0000000":    "equal-score segmentations (0 00 / 00 0): SentencePiece rounds path scores to float32, HF keeps float64",
	"15'000 and 2'000'000":    "equal-score segmentations, as above",
	"category_name:Travel, tool_name:World Scuba Diving Sites Api, api_name:Query Divesites by a country or a region., api_description:The endpoint returns a json list of dive sites which match the region or country entered as the query. The range of results depend but there is usually around 100-500 sites for each country. There are around 15'000 dive sites listed in the database., required_params: [{\"name\": \"country\", \"type\": \"STRING\", \"description\": \"\"}], optional_params: [], return_schema: {\"message\": \"str\"}": "equal-score segmentations of 000, as above",
}

// TestUnigramSPMvsHF checks that the spm.model and tokenizer.json paths differ exactly on
// spmHFDifferences.
func TestUnigramSPMvsHF(t *testing.T) {
	x := uniFixture(t)
	spm := loadUni(t, uniDir, false)
	hf := loadUni(t, filepath.Join(uniDir, "hf"), true)
	n := 0
	for i, text := range x.Texts {
		a, b := spm.Encode(text), hf.Encode(text)
		why, listed := spmHFDifferences[text]
		switch same := slices.Equal(a, b); {
		case !same && !listed:
			t.Errorf("text %d %q: spm.model and tokenizer.json differ:\n spm %v\n  hf %v", i, text, a, b)
		case same && listed:
			t.Errorf("text %d %q is listed in spmHFDifferences but both paths agree", i, text)
		case !same:
			n++
			t.Logf("%q: %s", text, why)
		}
	}
	t.Logf("%d/%d texts differ", n, len(x.Texts))
}

func TestSPModelDecode(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(uniDir, "spm.model"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseSPModel(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.pieces) != 2000 || m.modelType != 1 || m.normName != "nmt_nfkc" || len(m.charsmap) < 1000 ||
		!m.addDummyPrefix || !m.removeExtraWS || !m.escapeWS || m.byteFallback || m.wsAsSuffix {
		t.Fatalf("decoded %d pieces, type %d, normalizer %q (%d-byte charsmap) flags %v %v %v %v %v",
			len(m.pieces), m.modelType, m.normName, len(m.charsmap), m.addDummyPrefix, m.removeExtraWS, m.escapeWS, m.byteFallback, m.wsAsSuffix)
	}
	for i, want := range []spPiece{{"[PAD]", 0, pieceControl}, {"[CLS]", 0, pieceControl}, {"[SEP]", 0, pieceControl}, {"[UNK]", 0, pieceUnknown}} {
		if m.pieces[i] != want {
			t.Errorf("piece %d = %+v, want %+v", i, m.pieces[i], want)
		}
	}
	if p := m.pieces[4]; p.typ != pieceNormal || p.score >= 0 {
		t.Errorf("piece 4 = %+v, want a NORMAL piece with a log-probability score", p)
	}
}

// TestCharsmapRules checks lookups in the fixture's nmt_nfkc charsmap.
func TestCharsmapRules(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join(uniDir, "spm.model"))
	m, err := parseSPModel(b)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := parseCharsmap(m.charsmap, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"Ａbc", 3, "A"}, {"\t", 1, " "}, {"①", 3, "1"}, {"ﬁ", 3, "fi"}, {"\u200b", 3, " "}, {"\x01", 1, ""},
		{"Ａ\u0301", 5, "Á"}, {"\u3000", 3, " "}, {"x", 0, ""}, {"\u200d", 0, ""}, {"é", 0, ""}, {"", 0, ""},
	} {
		n, rep := cm.spmPrefix(c.in)
		if n != c.n || rep != c.want {
			t.Errorf("spmPrefix(%q) = %d %q, want %d %q", c.in, n, rep, c.n, c.want)
		}
		if c.n > 0 && c.n == len(c.in) {
			if rep, ok := cm.hfTransform(c.in); !ok || (c.in != "Ａ\u0301" && rep != c.want) {
				t.Errorf("hfTransform(%q) = %q %v", c.in, rep, ok)
			}
		}
	}
	// HF's rule for a short grapheme is its shortest prefix's: Ａ+U+0301 -> A, not Á.
	if got := cm.hfNormalize("Ａ\u0301 x"); got != "A x" {
		t.Errorf("hfNormalize = %q, want %q", got, "A x")
	}
}

// TestCharsmapBuilt checks the charsmap reader on one made by the test builder, and the
// SentencePiece-vs-HF normalisation differences on it.
func TestCharsmapBuilt(t *testing.T) {
	cm, err := parseCharsmap(buildCharsmap(tinyRules), false)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range tinyRules {
		if n, rep := cm.spmPrefix(k + "z"); n != len(k) || rep != v {
			t.Errorf("spmPrefix(%q) = %d %q, want %d %q", k+"z", n, rep, len(k), v)
		}
	}
	u := &unigram{cm: cm, addDummyPrefix: true, removeExtraWS: true, escapeWS: true}
	for _, c := range []struct{ in, spm, hf string }{
		{"  Ａ\tｂ  ", "▁A▁b", "  A b  "},
		{"\u200b a", "▁a", " a"},
		{"ｶﾞ", "▁ガ", "ｶﾞ"}, // one 6-byte grapheme: HF looks its characters up one by one
		{"e\u0301", "▁é", "é"},
		{"①\u0301", "▁1\u0301", "1"}, // HF: short grapheme replaced by its first character's rule
		{"", "", ""},
	} {
		if got := u.normalizeSPM(c.in); got != c.spm {
			t.Errorf("normalizeSPM(%q) = %q, want %q", c.in, got, c.spm)
		}
		if got := cm.hfNormalize(c.in); got != c.hf {
			t.Errorf("hfNormalize(%q) = %q, want %q", c.in, got, c.hf)
		}
	}
}

func TestUnigramViterbi(t *testing.T) {
	m, err := parseSPModel(buildSPModel(tinyPieces, 1, buildCharsmap(tinyRules)))
	if err != nil {
		t.Fatal(err)
	}
	u, err := newUnigramSPM(m)
	if err != nil {
		t.Fatal(err)
	}
	// Expected ids derived by hand from tinyPieces' scores.
	for _, c := range []struct {
		in   string
		want []int32
	}{
		{"ab", []int32{9}},                // ▁ab -4 beats ▁a b (-5.5) and ▁ ab (-4.5)
		{"a b", []int32{7, 4, 6}},         // ▁a ▁ b
		{"qq xa", []int32{4, 3, 4, 3, 5}}, // ▁ [UNK: qq fused] ▁ [UNK: x] a
		{"<x>ab", []int32{4, 15, 8}},      // the user-defined symbol is always chosen
		{"zz", []int32{4, 17, 17}},        // the UNUSED piece zz is skipped
		{"Ａ", []int32{4, 10}},             // charsmap (Ａ -> A) then pieces
		{"\x01", nil},                     // removed by the charsmap: nothing left
		{"000", []int32{4, 12, 13}},       // ties: 0 00 found first, kept
	} {
		if got := u.encode(c.in, nil); !slices.Equal(got, c.want) {
			t.Errorf("encode(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestUnigramSpecials checks DeBERTa-v3's special ids, templates, literal special tokens,
// truncation and padding on the spm.model tokenizer.
func TestUnigramSpecials(t *testing.T) {
	tok := loadUni(t, uniDir, false)
	if tok.PadID() != 0 || tok.CLSID() != 1 || tok.SEPID() != 2 || tok.UNKID() != 3 || tok.MaskID() != 2000 || tok.VocabSize() != 2001 {
		t.Fatalf("pad %d cls %d sep %d unk %d mask %d vocab %d", tok.PadID(), tok.CLSID(), tok.SEPID(), tok.UNKID(), tok.MaskID(), tok.VocabSize())
	}
	if tok.Token(2000) != MASK || tok.Lowercase() {
		t.Fatalf("token 2000 %q, lowercase %v", tok.Token(2000), tok.Lowercase())
	}
	enc := func(s string) []int32 { return tok.uni.encode(s, nil) }
	text := "[CLS] literal [SEP] tokens [MASK]"
	want := slices.Concat([]int32{1}, enc(" literal "), []int32{2}, enc(" tokens "), []int32{2000})
	if got := tok.Encode(text); !slices.Equal(got, want) {
		t.Errorf("Encode(%q) = %v, want %v", text, got, want)
	}
	a, b := "Find hotels in Lisbon for next weekend", "category_name:Travel, tool_name:Hotels"
	ea, eb := enc(a), enc(b)
	if got := tok.Single(a, 0); !slices.Equal(got, slices.Concat([]int32{1}, ea, []int32{2})) {
		t.Errorf("Single = %v", got)
	}
	if got := tok.Single(a, 5); !slices.Equal(got, slices.Concat([]int32{1}, ea[:3], []int32{2})) {
		t.Errorf("Single(5) = %v", got)
	}
	ids, types := tok.Pair(a, b, 0)
	if !slices.Equal(ids, slices.Concat([]int32{1}, ea, []int32{2}, eb, []int32{2})) {
		t.Errorf("Pair ids = %v", ids)
	}
	for i, ty := range types {
		if want := int32(0); i > len(ea)+1 {
			want = 1
			if ty != want {
				t.Errorf("Pair types = %v", types)
				break
			}
		} else if ty != want {
			t.Errorf("Pair types = %v", types)
			break
		}
	}
	ids, _ = tok.Pair(a, b, 10)
	if len(ids) != 10 || ids[0] != 1 || ids[9] != 2 {
		t.Errorf("Pair(10) = %v", ids)
	}
	batch := tok.Pad([][]int32{tok.Single("hi", 0), tok.Single(a, 0)}, nil, 0)
	if batch.IDs[0][batch.Len-1] != 0 || batch.Mask[0][batch.Len-1] != 0 || batch.Mask[1][0] != 1 {
		t.Errorf("Pad: %v %v", batch.IDs, batch.Mask)
	}
	if got := tok.Encode(""); len(got) != 0 {
		t.Errorf("Encode(\"\") = %v", got)
	}
}

// TestUnigramSaveRoundTrip saves the spm.model tokenizer: the tokenizer.json must be the
// fixture's (hf/, from which the HF ids were made) and, with spm.model and
// added_tokens.json, load back; a tokenizer.json tokenizer saves and loads back unchanged.
func TestUnigramSaveRoundTrip(t *testing.T) {
	x := uniFixture(t)
	spm := loadUni(t, uniDir, false)
	dir := t.TempDir()
	if err := spm.Save(dir); err != nil {
		t.Fatal(err)
	}
	var got, want any
	readJSON(t, filepath.Join(dir, "tokenizer.json"), &got)
	readJSON(t, filepath.Join(uniDir, "hf", "tokenizer.json"), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Save's tokenizer.json differs from %s/hf/tokenizer.json (regenerate with go run ./scripts/unigram/mkjson)", uniDir)
	}
	orig, _ := os.ReadFile(filepath.Join(uniDir, "spm.model"))
	if b, err := os.ReadFile(filepath.Join(dir, "spm.model")); err != nil || !bytes.Equal(b, orig) {
		t.Errorf("saved spm.model differs (%v)", err)
	}
	var added map[string]int
	readJSON(t, filepath.Join(dir, "added_tokens.json"), &added)
	if !reflect.DeepEqual(added, map[string]int{MASK: 2000}) {
		t.Errorf("added_tokens.json = %v", added)
	}
	// Without tokenizer.json the saved directory reads as the original spm.model tokenizer.
	if err := os.Remove(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	again := loadUni(t, dir, false)
	hf := loadUni(t, filepath.Join(uniDir, "hf"), true)
	dir2 := t.TempDir()
	if err := hf.Save(dir2); err != nil {
		t.Fatal(err)
	}
	hf2 := loadUni(t, dir2, true)
	for _, text := range x.Texts {
		if a, b := spm.Single(text, 0), again.Single(text, 0); !slices.Equal(a, b) {
			t.Errorf("%q: spm.model %v, saved spm.model %v", text, a, b)
		}
		if a, b := hf.Single(text, 0), hf2.Single(text, 0); !slices.Equal(a, b) {
			t.Errorf("%q: tokenizer.json %v, saved tokenizer.json %v", text, a, b)
		}
	}
	if hf2.MaskID() != 2000 || hf2.PadID() != 0 || hf2.VocabSize() != 2001 {
		t.Errorf("reloaded tokenizer.json: mask %d pad %d vocab %d", hf2.MaskID(), hf2.PadID(), hf2.VocabSize())
	}
}

// TestUnigramLoadErrors feeds broken models and configurations: each must fail with an
// error naming the problem, never panic.
func TestUnigramLoadErrors(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(uniDir, "spm.model"))
	if err != nil {
		t.Fatal(err)
	}
	cm := buildCharsmap(tinyRules)
	withPieces := func(f func([]testPiece) []testPiece) []byte {
		return buildSPModel(f(slices.Clone(tinyPieces)), 1, cm)
	}
	for _, c := range []struct {
		name  string
		model []byte
		files map[string]string
		want  string
	}{
		{"truncated", orig[:len(orig)/2], nil, "offset"},
		{"garbage", []byte{0xff, 0xff, 0xff}, nil, "bad field tag"},
		{"empty", nil, nil, "no pieces"},
		{"bpe", buildSPModel(tinyPieces, 2, cm), nil, "model_type 2"},
		{"no unk", withPieces(func(p []testPiece) []testPiece { p[3].typ = pieceControl; return p }), nil, "no unknown"},
		{"two unk", withPieces(func(p []testPiece) []testPiece { p[2].typ = pieceUnknown; return p }), nil, "already defined"},
		{"duplicate", withPieces(func(p []testPiece) []testPiece { p[5].piece = "b"; return p }), nil, "is already piece"},
		{"empty piece", withPieces(func(p []testPiece) []testPiece { p[5].piece = ""; return p }), nil, "empty"},
		{"byte piece", withPieces(func(p []testPiece) []testPiece { p[5].typ = pieceByte; return p }), nil, "byte piece"},
		{"bad type", withPieces(func(p []testPiece) []testPiece { p[5].typ = 9; return p }), nil, "unknown type 9"},
		{"charsmap short", buildSPModel(tinyPieces, 1, []byte{1, 2}), nil, "too short"},
		{"charsmap size", buildSPModel(tinyPieces, 1, []byte{0xff, 0xff, 0, 0, 1, 2, 3}), nil, "exceeds"},
		{"added gap", orig, map[string]string{"added_tokens.json": `{"[MASK]": 2005}`}, "want 2000"},
		{"added clash", orig, map[string]string{"added_tokens.json": `{"[MASK]": 5}`}, "which is piece"},
		{"bad config", orig, map[string]string{"tokenizer_config.json": `{`}, "tokenizer_config.json"},
		{"no cls", orig, map[string]string{"tokenizer_config.json": `{"cls_token": "<s>"}`}, `cls_token "<s>"`},
		{"punct", orig, map[string]string{"tokenizer_config.json": `{"split_by_punct": true}`}, "split_by_punct"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "spm.model"), c.model, 0o644); err != nil {
				t.Fatal(err)
			}
			for name, body := range c.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Load: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestUnigramJSONErrors edits the fixture's tokenizer.json into unsupported or broken ones.
func TestUnigramJSONErrors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(uniDir, "hf", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		out, _ := json.Marshal(m)
		return out
	}
	model := func(m map[string]any) map[string]any { return m["model"].(map[string]any) }
	for _, c := range []struct {
		name string
		json []byte
		want string
	}{
		{"unk_id", edit(func(m map[string]any) { model(m)["unk_id"] = 5000 }), "unk_id"},
		{"no unk_id", edit(func(m map[string]any) { delete(model(m), "unk_id") }), "unk_id"},
		{"byte_fallback", edit(func(m map[string]any) { model(m)["byte_fallback"] = true }), "byte_fallback"},
		{"bad entry", edit(func(m map[string]any) { model(m)["vocab"].([]any)[5] = []any{"x"} }), "not [piece, score]"},
		{"dup entry", edit(func(m map[string]any) { model(m)["vocab"].([]any)[5] = []any{"[SEP]", -1.0} }), "already entry"},
		{"normalizer", edit(func(m map[string]any) { m["normalizer"] = map[string]any{"type": "BertNormalizer"} }), `"BertNormalizer" is not supported`},
		{"base64", edit(func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Precompiled", "precompiled_charsmap": "!!"}
		}), "precompiled_charsmap"},
		{"regex", edit(func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{"Regex": "(?<=a)b"}, "content": ""}
		}), "regex"},
		{"first", edit(func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"}
		}), "prepend_scheme"},
		{"pretok", edit(func(m map[string]any) { m["pre_tokenizer"] = map[string]any{"type": "ByteLevel"} }), `"ByteLevel" is not supported`},
		{"template", edit(func(m map[string]any) { m["post_processor"] = map[string]any{"type": "RobertaProcessing"} }), "post_processor"},
		{"added id", edit(func(m map[string]any) { m["added_tokens"].([]any)[4].(map[string]any)["id"] = 3000 }), "outside"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseJSON("tokenizer.json", c.json)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("parseJSON: %v, want an error containing %q", err, c.want)
			}
		})
	}
}
