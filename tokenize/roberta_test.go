package tokenize

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// robertaDir writes a tokenizer.json laid out as all-mpnet-base-v2's: RoBERTa specials before
// the BERT vocabulary, RobertaProcessing, padding with <pad>.
func robertaDir(t *testing.T) string {
	t.Helper()
	vocab := map[string]int{"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "[PAD]": 4, "[UNK]": 5, "[CLS]": 6, "[SEP]": 7,
		"find": 8, "a": 9, "tool": 10, "##s": 11, "<mask>": 12}
	j := map[string]any{
		"version": "1.0",
		"added_tokens": []map[string]any{{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "<pad>", "special": true},
			{"id": 2, "content": "</s>", "special": true}, {"id": 5, "content": "[UNK]", "special": true}, {"id": 12, "content": "<mask>", "special": true}},
		"normalizer":     map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "RobertaProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 0}, "trim_offsets": true, "add_prefix_space": false},
		"padding":        map[string]any{"strategy": map[string]any{"Fixed": 128}, "direction": "Right", "pad_id": 1, "pad_type_id": 0, "pad_token": "<pad>"},
		"model":          map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
	}
	dir := t.TempDir()
	b, _ := json.Marshal(j)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRobertaProcessing(t *testing.T) {
	tok, err := Load(robertaDir(t))
	if err != nil {
		t.Fatal(err)
	}
	saved := t.TempDir()
	if err := tok.Save(saved); err != nil {
		t.Fatal(err)
	}
	again, err := Load(saved)
	if err != nil {
		t.Fatalf("reloading a saved RoBERTa-style tokenizer: %v", err)
	}
	for name, tk := range map[string]*Tokenizer{"loaded": tok, "saved and reloaded": again} {
		if got, want := tk.Single("Find tools", 0), []int32{0, 8, 10, 11, 2}; !slices.Equal(got, want) {
			t.Errorf("%s: Single = %v, want %v (<s> find tool ##s </s>)", name, got, want)
		}
		ids, types := tk.Pair("find", "a tool", 0)
		if want := []int32{0, 8, 2, 2, 9, 10, 2}; !slices.Equal(ids, want) {
			t.Errorf("%s: Pair = %v, want %v (<s> find </s></s> a tool </s>)", name, ids, want)
		}
		if want := []int32{0, 0, 0, 0, 1, 1, 1}; !slices.Equal(types, want) {
			t.Errorf("%s: Pair types = %v, want %v", name, types, want)
		}
		// Truncation counts the four specials: 6 tokens leave 2 for the texts.
		if ids, _ := tk.Pair("find tools", "a tool", 6); !slices.Equal(ids, []int32{0, 8, 2, 2, 9, 2}) {
			t.Errorf("%s: Pair(maxLen 6) = %v", name, ids)
		}
		if tk.PadID() != 1 || tk.UNKID() != 5 || tk.MaskID() != 12 || !tk.DoubleSep() {
			t.Errorf("%s: pad %d unk %d mask %d double separator %v: want 1, 5, 12, true", name, tk.PadID(), tk.UNKID(), tk.MaskID(), tk.DoubleSep())
		}
	}
}
