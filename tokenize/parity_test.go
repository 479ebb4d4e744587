package tokenize

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

type parityFixture struct {
	Generator string `json:"generator"`
	Singles   []struct {
		Text string  `json:"text"`
		IDs  []int32 `json:"ids"`
	} `json:"singles"`
	Pairs []struct {
		A, B  string
		IDs   []int32 `json:"ids"`
		Types []int32 `json:"types"`
	} `json:"pairs"`
}

func sharedVocab(t *testing.T) string {
	t.Helper()
	p, _ := filepath.Abs("../../shared/vocab/bert-base-uncased-vocab.txt")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s absent: skipping", p)
	}
	return p
}

// TestParityTransformersJS compares toolret's ids with @huggingface/transformers' on the
// committed fixture (scripts/tokparity/make_fixture.mjs), through a tokenizer.json written by
// Save and read back by Load, and checks truncation against HF Python tokenizers' rule.
func TestParityTransformersJS(t *testing.T) {
	b, err := os.ReadFile("testdata/parity.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx parityFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	v, err := FromVocab(sharedVocab(t), true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := v.Save(dir); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range fx.Singles {
		if got := tok.Single(c.Text, 0); !reflect.DeepEqual(got, c.IDs) {
			t.Errorf("%q:\n got %v\nwant %v", c.Text, got, c.IDs)
		}
		// Truncated to 16: [CLS] first 14 pieces [SEP] (Python rule; transformers.js differs).
		body := c.IDs[1 : len(c.IDs)-1]
		want := append(append([]int32{tok.CLSID()}, body[:min(len(body), 14)]...), tok.SEPID())
		if got := tok.Single(c.Text, 16); !reflect.DeepEqual(got, want) {
			t.Errorf("%q truncated to 16: got %v want %v", c.Text, got, want)
		}
		n++
	}
	for _, c := range fx.Pairs {
		ids, types := tok.Pair(c.A, c.B, 0)
		if !reflect.DeepEqual(ids, c.IDs) || !reflect.DeepEqual(types, c.Types) {
			t.Errorf("pair (%q, %q):\n got %v %v\nwant %v %v", c.A, c.B, ids, types, c.IDs, c.Types)
			continue
		}
		// Longest-first truncation to 32, derived from the untruncated ids.
		var a, bb []int32
		for i := 1; i < len(c.IDs)-1; i++ {
			if c.Types[i] == 0 && c.IDs[i] != tok.SEPID() {
				a = append(a, c.IDs[i])
			} else if c.Types[i] == 1 {
				bb = append(bb, c.IDs[i])
			}
		}
		for len(a)+len(bb) > 32-3 {
			if len(a) > len(bb) {
				a = a[:len(a)-1]
			} else {
				bb = bb[:len(bb)-1]
			}
		}
		want := append(append(append(append([]int32{tok.CLSID()}, a...), tok.SEPID()), bb...), tok.SEPID())
		if got, _ := tok.Pair(c.A, c.B, 32); !reflect.DeepEqual(got, want) {
			t.Errorf("pair (%q, %q) truncated to 32: got %v want %v", c.A, c.B, got, want)
		}
		n++
	}
	t.Logf("%d texts and pairs identical to %s", n, fx.Generator)
	if n < 200 {
		t.Fatalf("fixture has %d cases, want >= 200", n)
	}
}
