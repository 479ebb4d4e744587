package tokenize

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type bpeCase struct {
	Text   string   `json:"text"`
	IDs    []int32  `json:"ids"`
	Tokens []string `json:"tokens"`
	Pre    []string `json:"pretokens"`
}

func loadBPECases(t testing.TB, dir string) []bpeCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "ids.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []bpeCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 20 {
		t.Fatalf("%s: %d cases", dir, len(cases))
	}
	return cases
}

// TestBPEParity compares the ids of the BPE tokenizers of testdata/bpe (made by
// scripts/parity/make_bpe_fixture.py with the tokenizers library) with the library's, template
// included, exactly.
func TestBPEParity(t *testing.T) {
	for _, name := range []string{"qwen3", "modernbert", "gpt2", "gemma"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "bpe", name)
			tok, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range loadBPECases(t, dir) {
				got := tok.Single(c.Text, 0)
				if !slices.Equal(got, c.IDs) {
					toks := make([]string, len(got))
					for i, id := range got {
						toks[i] = tok.Token(id)
					}
					t.Errorf("%q:\n got %v %q\nwant %v %q", c.Text, got, toks, c.IDs, c.Tokens)
				}
			}
		})
	}
}

// TestBPEPreTokenizerParity compares the pieces of the pre-tokenizers (the Split regex of
// Qwen2/Qwen3 and the ByteLevel one of GPT-2 and ModernBERT, whose \s+(?!\S) Go's regexp lacks)
// with the tokenizers library's pre_tokenize_str on the normalized text.
func TestBPEPreTokenizerParity(t *testing.T) {
	for _, name := range []string{"qwen3", "modernbert", "gpt2", "gemma"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "bpe", name)
			tok, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range loadBPECases(t, dir) {
				s := c.Text
				for _, f := range tok.bpe.norms {
					s = f(s)
				}
				var got []string
				if s != "" { // HF has no piece to pre-tokenize in an empty text
					got = []string{s}
				}
				for _, p := range tok.bpe.pre {
					got = p(got)
				}
				if len(got) == 0 {
					got = nil
				}
				want := c.Pre
				if len(want) == 0 {
					want = nil
				}
				if !slices.Equal(got, want) {
					t.Errorf("%q:\n got %q\nwant %q", c.Text, got, want)
				}
			}
		})
	}
}

// TestBPETemplate checks truncation and the pair layout of each template.
func TestBPETemplate(t *testing.T) {
	for _, c := range []struct {
		name      string
		maxLen    int
		first     string // the special first in Single's output, "" for none
		last      string
		pairTypes bool // whether the second text has type 1
	}{
		{"qwen3", 5, "", "<|endoftext|>", true},
		{"modernbert", 5, "[CLS]", "[SEP]", false},
		{"gpt2", 5, "<s>", "</s>", true},
		{"gemma", 5, "<bos>", "<eos>", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tok, err := Load(filepath.Join("testdata", "bpe", c.name))
			if err != nil {
				t.Fatal(err)
			}
			ids := tok.Single("multiple   spaces    between     words", c.maxLen)
			if len(ids) != c.maxLen {
				t.Fatalf("Single len %d, want %d", len(ids), c.maxLen)
			}
			if c.first != "" && tok.Token(ids[0]) != c.first {
				t.Errorf("first %q, want %q", tok.Token(ids[0]), c.first)
			}
			if tok.Token(ids[len(ids)-1]) != c.last {
				t.Errorf("last %q, want %q", tok.Token(ids[len(ids)-1]), c.last)
			}
			a, b := tok.Encode("hello world"), tok.Encode("the web")
			pair, types := tok.PairOf(a, b, 0)
			if len(pair) != len(types) || len(pair) < len(a)+len(b)+1 {
				t.Fatalf("pair %v types %v", pair, types)
			}
			if types[len(types)-1] == 1 != c.pairTypes {
				t.Errorf("types %v, want second text of type 1: %v", types, c.pairTypes)
			}
			pair, _ = tok.PairOf(a, b, 6)
			if len(pair) != 6 {
				t.Errorf("truncated pair %v, want 6 ids", pair)
			}
		})
	}
}

// TestBPESave checks that a saved BPE tokenizer loads back with the same ids.
func TestBPESave(t *testing.T) {
	for _, name := range []string{"qwen3", "gemma"} {
		dir := filepath.Join("testdata", "bpe", name)
		tok, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		if err := tok.Save(out); err != nil {
			t.Fatal(err)
		}
		back, err := Load(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range loadBPECases(t, dir) {
			if got := back.Single(c.Text, 0); !slices.Equal(got, c.IDs) {
				t.Errorf("%s %q: saved and loaded gives %v, want %v", name, c.Text, got, c.IDs)
			}
		}
		if back.PadID() != tok.PadID() || back.VocabSize() != tok.VocabSize() {
			t.Errorf("%s: pad %d vocab %d, want %d %d", name, back.PadID(), back.VocabSize(), tok.PadID(), tok.VocabSize())
		}
	}
}

// TestBPELoadErrors checks that unsupported or broken BPE files are refused naming the file
// and what is wrong.
func TestBPELoadErrors(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("testdata", "bpe", "modernbert", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	model := func(m map[string]any) map[string]any { return m["model"].(map[string]any) }
	for _, c := range []struct {
		name string
		edit func(m map[string]any)
		err  string
	}{
		{"merge not in vocab", func(m map[string]any) { model(m)["merges"] = []any{"zzq qqz"} }, `merge 0 ("zzq", "qqz")`},
		{"merge form", func(m map[string]any) { model(m)["merges"] = []any{"a b c"} }, `merge 0 "a b c"`},
		{"merge list", func(m map[string]any) { model(m)["merges"] = []any{[]any{"a"}} }, `merge 0 ["a"]`},
		{"dropout", func(m map[string]any) { model(m)["dropout"] = 0.1 }, "dropout 0.1"},
		{"unk", func(m map[string]any) { model(m)["unk_token"] = "<nope>" }, `unk_token "<nope>"`},
		{"pre", func(m map[string]any) { m["pre_tokenizer"] = map[string]any{"type": "Digits"} }, `pre_tokenizer: type "Digits"`},
		{"lookbehind", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `(?<=a)b`}, "behavior": "Isolated"}
		}, "lookaround"},
		{"nested lookahead", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `a(\s+(?!\S))`}, "behavior": "Isolated"}
		}, "whole top-level alternative"},
		{"behavior", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"String": " "}, "behavior": "Sideways"}
		}, `behavior "Sideways"`},
		{"normalizer", func(m map[string]any) { m["normalizer"] = map[string]any{"type": "BertNormalizer"} }, `normalizer: type "BertNormalizer"`},
		{"post", func(m map[string]any) { m["post_processor"] = map[string]any{"type": "Nope"} }, `post_processor: type "Nope"`},
		{"template special", func(m map[string]any) {
			m["post_processor"].(map[string]any)["special_tokens"] = map[string]any{}
		}, `special token "[CLS]" missing`},
		{"gap", func(m map[string]any) { model(m)["vocab"].(map[string]any)["zzz"] = 100000 }, "no token has id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(base, &m); err != nil {
				t.Fatal(err)
			}
			c.edit(m)
			b, _ := json.Marshal(m)
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "tokenizer.json") {
				t.Errorf("error %v, want %q naming the file", err, c.err)
			}
		})
	}
}

// TestSplitBehaviors checks HF's Split behaviors on one string.
func TestSplitBehaviors(t *testing.T) {
	s := "a--b-c-"
	m := literalFinder("-")(s)
	for _, c := range []struct {
		b      splitBehavior
		invert bool
		want   []string
	}{
		{splitRemoved, false, []string{"a", "b", "c"}},
		{splitIsolated, false, []string{"a", "-", "-", "b", "-", "c", "-"}},
		{splitMergedWithPrevious, false, []string{"a-", "-", "b-", "c-"}},
		{splitMergedWithNext, false, []string{"a", "-", "-b", "-c", "-"}},
		{splitContiguous, false, []string{"a", "--", "b", "-", "c", "-"}},
		{splitRemoved, true, []string{"-", "-", "-", "-"}},
	} {
		if got := splitPiece(s, m, c.b, c.invert); !slices.Equal(got, c.want) {
			t.Errorf("behavior %d invert %v: %q, want %q", c.b, c.invert, got, c.want)
		}
	}
}

// FuzzBPE checks that any text encodes without panicking into ids of the vocabulary, the
// same on a second call (the per-word cache), for the byte-level and the byte-fallback layouts.
func FuzzBPE(f *testing.F) {
	toks := map[string]*Tokenizer{}
	for _, name := range []string{"qwen3", "gemma"} {
		tok, err := Load(filepath.Join("testdata", "bpe", name))
		if err != nil {
			f.Fatal(err)
		}
		toks[name] = tok
	}
	for _, s := range []string{"", " ", "hello  world\n", "<|endoftext|>x", "\xff\xfe", "😀 查询", "a\u3000 b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, tok := range toks {
			ids := tok.Encode(s)
			for _, id := range ids {
				if id < 0 || int(id) >= tok.VocabSize() {
					t.Fatalf("%s %q: id %d outside the vocabulary", name, s, id)
				}
			}
			if again := tok.Encode(s); !slices.Equal(again, ids) {
				t.Fatalf("%s %q: %v then %v", name, s, ids, again)
			}
			if name == "qwen3" && s != "" && !strings.Contains(s, "<|") && len(ids) == 0 {
				t.Fatalf("%s %q: no ids (byte-level covers every byte)", name, s)
			}
		}
	})
}

// BenchmarkBPE encodes the fixture texts with each layout (the per-word cache warm after the
// first pass, as in serving).
func BenchmarkBPE(b *testing.B) {
	for _, name := range []string{"qwen3", "modernbert", "gemma"} {
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join("testdata", "bpe", name)
			tok, err := Load(dir)
			if err != nil {
				b.Fatal(err)
			}
			cases := loadBPECases(b, dir)
			n := 0
			for _, c := range cases {
				n += len(c.Text)
			}
			b.SetBytes(int64(n))
			b.ResetTimer()
			for range b.N {
				for _, c := range cases {
					tok.Encode(c.Text)
				}
			}
		})
	}
}

// splitterTexts are the fixture texts, which the parity tests check against the tokenizers
// library, and a few more edge cases.
func splitterTexts(t testing.TB) []string {
	var texts []string
	for _, c := range loadBPECases(t, filepath.Join("testdata", "bpe", "qwen3")) {
		texts = append(texts, c.Text)
	}
	return append(texts, "'", "''s", " '", "a'S", "x 12345 y", "\r\n\r\n ", " \n", "\t\n x", "1\u00a0\u00a02", "ǅ'LL")
}

// TestSplittersAgree: the hand-written matchers of the GPT-2, Qwen2 and Llama 3 patterns give
// the regex emulation's matches (compileHFRegex, used for any other pattern), so each checks
// the other.
func TestSplittersAgree(t *testing.T) {
	for _, pat := range []string{gpt2Pattern, qwen2Pattern, llama3Pattern} {
		hand, ok := knownSplitter(pat)
		if !ok {
			t.Fatalf("%s: no hand-written matcher", pat)
		}
		re, err := compileHFRegex(pat)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range splitterTexts(t) {
			if got, want := hand(s), re.find(s); !slices.Equal(got, want) {
				t.Errorf("pattern %.20s... %q:\n hand  %v\n regex %v", pat, s, got, want)
			}
		}
	}
}

// FuzzSplitters compares the hand-written matchers with the regex emulation on any text.
func FuzzSplitters(f *testing.F) {
	type pair struct {
		hand func(string) [][2]int
		re   *hfRegex
	}
	var ps []pair
	for _, pat := range []string{gpt2Pattern, qwen2Pattern, llama3Pattern} {
		hand, _ := knownSplitter(pat)
		re, err := compileHFRegex(pat)
		if err != nil {
			f.Fatal(err)
		}
		ps = append(ps, pair{hand, re})
	}
	for _, s := range splitterTexts(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.ToValidUTF8(s, "\uFFFD")
		for i, p := range ps {
			if got, want := p.hand(s), p.re.find(s); !slices.Equal(got, want) {
				t.Fatalf("pattern %d %q:\n hand  %v\n regex %v", i, s, got, want)
			}
		}
	})
}
