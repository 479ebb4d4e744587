package tokenize

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Tokenizer is a BERT WordPiece tokenizer. It is safe for concurrent use.
type Tokenizer struct {
	vocab         map[string]int32
	inv           []string
	lower         bool
	stripAccents  bool
	chineseChars  bool
	prefix        string
	maxInputChars int
	unk, cls, sep int32
	pad, mask     int32
	specials      []string // special tokens matched literally in raw text
}

// Special token names.
const (
	UNK  = "[UNK]"
	CLS  = "[CLS]"
	SEP  = "[SEP]"
	PAD  = "[PAD]"
	MASK = "[MASK]"
)

// New builds a tokenizer from an ordered vocabulary (id = position). lower also strips
// accents, as BERT uncased models do.
func New(vocab []string, lower bool) (*Tokenizer, error) {
	return newTokenizer(vocab, lower, "vocabulary", nil)
}

func newTokenizer(vocab []string, lower bool, src string, lines []int) (*Tokenizer, error) {
	if len(vocab) == 0 {
		return nil, fmt.Errorf("%s: empty vocabulary", src)
	}
	t := &Tokenizer{vocab: make(map[string]int32, len(vocab)), inv: vocab, lower: lower, stripAccents: lower,
		chineseChars: true, prefix: "##", maxInputChars: 100}
	at := func(i int) string {
		if lines != nil {
			return fmt.Sprintf("%s:%d", src, lines[i])
		}
		return fmt.Sprintf("%s entry %d", src, i)
	}
	for i, tok := range vocab {
		if tok == "" {
			return nil, fmt.Errorf("%s: empty token", at(i))
		}
		if prev, dup := t.vocab[tok]; dup {
			return nil, fmt.Errorf("%s: duplicate token %q (also id %d)", at(i), tok, prev)
		}
		t.vocab[tok] = int32(i)
	}
	for _, sp := range []struct {
		name string
		id   *int32
	}{{UNK, &t.unk}, {CLS, &t.cls}, {SEP, &t.sep}, {PAD, &t.pad}} {
		id, ok := t.vocab[sp.name]
		if !ok {
			return nil, fmt.Errorf("%s: vocabulary has no %s token", src, sp.name)
		}
		*sp.id = id
	}
	t.mask = -1
	if id, ok := t.vocab[MASK]; ok {
		t.mask = id
	}
	for _, sp := range []string{PAD, UNK, CLS, SEP, MASK} {
		if _, ok := t.vocab[sp]; ok {
			t.specials = append(t.specials, sp)
		}
	}
	return t, nil
}

// FromVocab reads a BERT vocab.txt (one token per line, id = line number - 1).
func FromVocab(path string, lower bool) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var vocab []string
	var lines []int
	r := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := r.ReadString('\n')
		if line != "" || err == nil {
			tok := strings.TrimRight(line, "\r\n")
			vocab = append(vocab, tok)
			lines = append(lines, n)
		}
		if err != nil {
			break
		}
	}
	return newTokenizer(vocab, lower, path, lines)
}

// jsonTokenizer is the subset of HF's tokenizer.json toolret reads and writes.
type jsonTokenizer struct {
	Version       string          `json:"version"`
	Truncation    any             `json:"truncation"`
	Padding       any             `json:"padding"`
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    *jsonNormalizer `json:"normalizer"`
	PreTokenizer  map[string]any  `json:"pre_tokenizer"`
	PostProcessor map[string]any  `json:"post_processor"`
	Decoder       map[string]any  `json:"decoder"`
	Model         jsonModel       `json:"model"`
}

type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	Lstrip     bool   `json:"lstrip"`
	Rstrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type jsonNormalizer struct {
	Type               string `json:"type"`
	CleanText          bool   `json:"clean_text"`
	HandleChineseChars bool   `json:"handle_chinese_chars"`
	StripAccents       *bool  `json:"strip_accents"`
	Lowercase          bool   `json:"lowercase"`
}

type jsonModel struct {
	Type                    string           `json:"type"`
	UnkToken                string           `json:"unk_token"`
	ContinuingSubwordPrefix string           `json:"continuing_subword_prefix"`
	MaxInputCharsPerWord    int              `json:"max_input_chars_per_word"`
	Vocab                   map[string]int32 `json:"vocab"`
}

// Load reads a tokenizer from a model directory: tokenizer.json if present, else vocab.txt
// with do_lower_case from tokenizer_config.json (default true).
func Load(dir string) (*Tokenizer, error) {
	if b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json")); err == nil {
		return parseJSON(filepath.Join(dir, "tokenizer.json"), b)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	lower := true
	if b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil {
		var c struct {
			DoLowerCase *bool `json:"do_lower_case"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "tokenizer_config.json"), err)
		}
		if c.DoLowerCase != nil {
			lower = *c.DoLowerCase
		}
	}
	vocab := filepath.Join(dir, "vocab.txt")
	if _, err := os.Stat(vocab); err != nil {
		return nil, fmt.Errorf("tokenizer %s: neither tokenizer.json nor vocab.txt found", dir)
	}
	return FromVocab(vocab, lower)
}

func parseJSON(path string, b []byte) (*Tokenizer, error) {
	var j jsonTokenizer
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if j.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("%s: model type %q is not supported (WordPiece only)", path, j.Model.Type)
	}
	if j.Normalizer != nil && j.Normalizer.Type != "BertNormalizer" {
		return nil, fmt.Errorf("%s: normalizer %q is not supported (BertNormalizer only)", path, j.Normalizer.Type)
	}
	vocab := make([]string, len(j.Model.Vocab))
	for tok, id := range j.Model.Vocab {
		if id < 0 || int(id) >= len(vocab) {
			return nil, fmt.Errorf("%s: token %q has id %d outside [0, %d)", path, tok, id, len(vocab))
		}
		if vocab[id] != "" {
			return nil, fmt.Errorf("%s: id %d used by %q and %q", path, id, vocab[id], tok)
		}
		vocab[id] = tok
	}
	lower := true
	if j.Normalizer != nil {
		lower = j.Normalizer.Lowercase
	}
	t, err := newTokenizer(vocab, lower, path, nil)
	if err != nil {
		return nil, err
	}
	if j.Normalizer != nil {
		t.chineseChars = j.Normalizer.HandleChineseChars
		if j.Normalizer.StripAccents != nil {
			t.stripAccents = *j.Normalizer.StripAccents
		}
	}
	if j.Model.ContinuingSubwordPrefix != "" {
		t.prefix = j.Model.ContinuingSubwordPrefix
	}
	if j.Model.MaxInputCharsPerWord > 0 {
		t.maxInputChars = j.Model.MaxInputCharsPerWord
	}
	if j.Model.UnkToken != "" {
		id, ok := t.vocab[j.Model.UnkToken]
		if !ok {
			return nil, fmt.Errorf("%s: unk_token %q not in the vocabulary", path, j.Model.UnkToken)
		}
		t.unk = id
	}
	return t, nil
}

// Save writes tokenizer.json (HF format), vocab.txt, tokenizer_config.json and
// special_tokens_map.json into dir.
func (t *Tokenizer) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	vocab := make(map[string]int32, len(t.inv))
	for i, tok := range t.inv {
		vocab[tok] = int32(i)
	}
	var added []addedToken
	for _, name := range []string{PAD, UNK, CLS, SEP, MASK} {
		if id, ok := t.vocab[name]; ok {
			added = append(added, addedToken{ID: int(id), Content: name, Special: true})
		}
	}
	strip := t.stripAccents
	var stripPtr *bool
	if strip != t.lower {
		stripPtr = &strip
	}
	j := jsonTokenizer{
		Version: "1.0", AddedTokens: added,
		Normalizer:   &jsonNormalizer{Type: "BertNormalizer", CleanText: true, HandleChineseChars: t.chineseChars, StripAccents: stripPtr, Lowercase: t.lower},
		PreTokenizer: map[string]any{"type": "BertPreTokenizer"},
		PostProcessor: map[string]any{
			"type": "TemplateProcessing",
			"single": []any{
				map[string]any{"SpecialToken": map[string]any{"id": CLS, "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": SEP, "type_id": 0}},
			},
			"pair": []any{
				map[string]any{"SpecialToken": map[string]any{"id": CLS, "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": SEP, "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}},
				map[string]any{"SpecialToken": map[string]any{"id": SEP, "type_id": 1}},
			},
			"special_tokens": map[string]any{
				CLS: map[string]any{"id": CLS, "ids": []int32{t.cls}, "tokens": []string{CLS}},
				SEP: map[string]any{"id": SEP, "ids": []int32{t.sep}, "tokens": []string{SEP}},
			},
		},
		Decoder: map[string]any{"type": "WordPiece", "prefix": t.prefix, "cleanup": true},
		Model: jsonModel{Type: "WordPiece", UnkToken: t.inv[t.unk], ContinuingSubwordPrefix: t.prefix,
			MaxInputCharsPerWord: t.maxInputChars, Vocab: vocab},
	}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "vocab.txt"), []byte(strings.Join(t.inv, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	cfg := map[string]any{"do_lower_case": t.lower, "strip_accents": stripPtr, "tokenize_chinese_chars": t.chineseChars,
		"tokenizer_class": "BertTokenizer", "model_max_length": 512,
		"unk_token": t.inv[t.unk], "sep_token": SEP, "pad_token": PAD, "cls_token": CLS, "mask_token": MASK}
	b, _ = json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), b, 0o644); err != nil {
		return err
	}
	sp := map[string]string{"unk_token": t.inv[t.unk], "sep_token": SEP, "pad_token": PAD, "cls_token": CLS, "mask_token": MASK}
	b, _ = json.MarshalIndent(sp, "", "  ")
	return os.WriteFile(filepath.Join(dir, "special_tokens_map.json"), b, 0o644)
}

// VocabSize is the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.inv) }

// Vocab returns the tokens in id order (do not modify).
func (t *Tokenizer) Vocab() []string { return t.inv }

// PadID, CLSID, SEPID and UNKID return the special token ids.
func (t *Tokenizer) PadID() int32 { return t.pad }

// CLSID is the id of [CLS].
func (t *Tokenizer) CLSID() int32 { return t.cls }

// SEPID is the id of [SEP].
func (t *Tokenizer) SEPID() int32 { return t.sep }

// UNKID is the id of [UNK].
func (t *Tokenizer) UNKID() int32 { return t.unk }

// Lowercase reports whether the tokenizer lowercases.
func (t *Tokenizer) Lowercase() bool { return t.lower }
