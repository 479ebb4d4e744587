package tokenize

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
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
