package tokenize

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// xlmrDir writes a Unigram tokenizer.json laid out as transformers 5 writes XLM-RoBERTa's:
// fairseq specials, WhitespaceSplit then Metaspace, the template <s> $A </s> </s> $B </s>
// (every type 0). post replaces the pair template when non-nil.
func xlmrDir(t *testing.T, pair []any) string {
	t.Helper()
	item := func(kind, id string, ty int) map[string]any {
		return map[string]any{kind: map[string]any{"id": id, "type_id": ty}}
	}
	if pair == nil {
		pair = []any{item("SpecialToken", "<s>", 0), item("Sequence", "A", 0), item("SpecialToken", "</s>", 0),
			item("SpecialToken", "</s>", 0), item("Sequence", "B", 0), item("SpecialToken", "</s>", 0)}
	}
	j := map[string]any{
		"added_tokens": []map[string]any{{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "<pad>", "special": true},
			{"id": 2, "content": "</s>", "special": true}, {"id": 3, "content": "<unk>", "special": true}, {"id": 8, "content": "<mask>", "special": true}},
		"normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{map[string]any{"type": "WhitespaceSplit"},
			map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}}},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single": []any{item("SpecialToken", "<s>", 0), item("Sequence", "A", 0), item("SpecialToken", "</s>", 0)},
			"pair":   pair,
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{0}, "tokens": []string{"<s>"}},
				"</s>": map[string]any{"id": "</s>", "ids": []int{2}, "tokens": []string{"</s>"}}}},
		"model": map[string]any{"type": "Unigram", "unk_id": 3, "vocab": [][]any{{"<s>", 0.0}, {"<pad>", 0.0}, {"</s>", 0.0}, {"<unk>", 0.0},
			{"▁", -2.0}, {"▁find", -3.0}, {"▁tool", -3.0}, {"s", -4.0}, {"<mask>", 0.0}}},
	}
	dir := t.TempDir()
	b, _ := json.Marshal(j)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestXLMRobertaLayout: WhitespaceSplit drops every whitespace run (tabs, newlines, leading and
// trailing spaces) before Metaspace prepends ▁ to each word; RoBERTa's pair template joins
// with two </s>; the specials are RoBERTa's; a pair template that is neither BERT's nor
// RoBERTa's is refused.
func TestXLMRobertaLayout(t *testing.T) {
	tok, err := Load(xlmrDir(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string][]int32{
		"find tools":        {0, 5, 6, 7, 2},
		"  find\t\ntools  ": {0, 5, 6, 7, 2},
		" ":                 {0, 2},
		"find  \u3000 tool": {0, 5, 6, 2}, // U+3000 is Unicode White_Space
	} {
		if got := tok.Single(text, 0); !slices.Equal(got, want) {
			t.Errorf("Single(%q) = %v, want %v", text, got, want)
		}
	}
	if ids, _ := tok.Pair("find", "tools", 0); !slices.Equal(ids, []int32{0, 5, 2, 2, 6, 7, 2}) {
		t.Errorf("Pair = %v, want <s> find </s></s> tool s </s>", ids)
	}
	if tok.MaskID() != 8 || tok.PadID() != 1 || !tok.DoubleSep() {
		t.Errorf("mask %d pad %d doubleSep %v: want 8, 1, true", tok.MaskID(), tok.PadID(), tok.DoubleSep())
	}
	item := func(kind, id string, ty int) map[string]any {
		return map[string]any{kind: map[string]any{"id": id, "type_id": ty}}
	}
	for name, pair := range map[string][]any{
		"B before A": {item("SpecialToken", "<s>", 0), item("Sequence", "B", 0), item("SpecialToken", "</s>", 0),
			item("SpecialToken", "</s>", 0), item("Sequence", "A", 0), item("SpecialToken", "</s>", 0)},
		"mixed types": {item("SpecialToken", "<s>", 0), item("Sequence", "A", 0), item("SpecialToken", "</s>", 0),
			item("SpecialToken", "</s>", 1), item("Sequence", "B", 0), item("SpecialToken", "</s>", 1)},
		"other special": {item("SpecialToken", "<s>", 0), item("Sequence", "A", 0), item("SpecialToken", "</s>", 0),
			item("SpecialToken", "<s>", 0), item("Sequence", "B", 0), item("SpecialToken", "</s>", 0)},
	} {
		if _, err := Load(xlmrDir(t, pair)); err == nil || !strings.Contains(err.Error(), "post_processor") {
			t.Errorf("%s: %v, want the pair template refused", name, err)
		}
	}
}
