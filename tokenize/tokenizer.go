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

// Tokenizer is a BERT WordPiece tokenizer or, loaded from an spm.model or a Unigram
// tokenizer.json, a SentencePiece Unigram one (unigram.go), or, loaded from a BPE
// tokenizer.json, a byte-level or byte-fallback BPE one (bpe.go) with its post-processor's
// template; all add their special tokens ([CLS]/[SEP] or the template's) and share truncation,
// padding and bucketing. It is safe for concurrent use (once Buckets is set).
type Tokenizer struct {
	// Buckets are the padded lengths Pad uses (any order); nil means DefaultBuckets.
	Buckets []int

	vocab         map[string]int32
	inv           []string
	lower         bool
	stripAccents  bool
	cleanText     bool
	chineseChars  bool
	prefix        string
	maxInputChars int
	unk, cls, sep int32
	pad, mask     int32
	doubleSep     bool     // RoBERTa's pair template, <s> A </s></s> B </s> (RobertaProcessing)
	specials      []string // added tokens matched literally in raw text (longest first on ties)

	uni  *unigram // Unigram segmentation (nil: WordPiece)
	bpe  *bpe     // BPE segmentation with its own pipeline (bpe.go)
	tmpl *template
	// bpeJSON is the BPE tokenizer.json read (Save writes it back).
	bpeJSON []byte
	// rows, when positive, is EmbeddingRows (a BPE tokenizer.json whose added tokens come
	// after its vocabulary); 0: VocabSize.
	rows   int
	spm    []byte   // the spm.model it was read from, if any (Save writes it back)
	uniCfg *uniJSON // the Unigram tokenizer.json it was read from, if any
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
		cleanText: true, chineseChars: true, prefix: "##", maxInputChars: 100}
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

// Load reads a tokenizer from a model directory: tokenizer.json if present (WordPiece,
// Unigram or BPE), else a SentencePiece spm.model (Unigram, with tokenizer_config.json and
// added_tokens.json, as DeBERTa-v3 ships it), else vocab.txt with do_lower_case (default
// true), strip_accents and tokenize_chinese_chars from tokenizer_config.json.
func Load(dir string) (*Tokenizer, error) {
	if b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json")); err == nil {
		return parseJSON(filepath.Join(dir, "tokenizer.json"), b)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if b, err := os.ReadFile(filepath.Join(dir, "spm.model")); err == nil {
		return loadSPM(dir, filepath.Join(dir, "spm.model"), b)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var c struct {
		DoLowerCase  *bool `json:"do_lower_case"`
		StripAccents *bool `json:"strip_accents"`
		Chinese      *bool `json:"tokenize_chinese_chars"`
	}
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	if b, err := os.ReadFile(cfgPath); err == nil {
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", cfgPath, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	vocab := filepath.Join(dir, "vocab.txt")
	if _, err := os.Stat(vocab); err != nil {
		return nil, fmt.Errorf("tokenizer %s: no tokenizer.json, spm.model or vocab.txt found", dir)
	}
	t, err := FromVocab(vocab, c.DoLowerCase == nil || *c.DoLowerCase)
	if err != nil {
		return nil, err
	}
	if c.StripAccents != nil {
		t.stripAccents = *c.StripAccents
	}
	if c.Chinese != nil {
		t.chineseChars = *c.Chinese
	}
	return t, nil
}

func parseJSON(path string, b []byte) (*Tokenizer, error) {
	var head struct {
		Model struct {
			Type string `json:"type"`
		} `json:"model"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch head.Model.Type {
	case "Unigram":
		return parseUnigramJSON(path, b)
	case "BPE":
		return parseBPEJSON(path, b)
	}
	var j jsonTokenizer
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if j.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("%s: model type %q is not supported (WordPiece, Unigram or BPE only)", path, j.Model.Type)
	}
	if j.Normalizer != nil && j.Normalizer.Type != "BertNormalizer" {
		return nil, fmt.Errorf("%s: normalizer %q is not supported (BertNormalizer only)", path, j.Normalizer.Type)
	}
	if typ, _ := j.PreTokenizer["type"].(string); typ != "BertPreTokenizer" {
		return nil, fmt.Errorf("%s: pre_tokenizer %q is not supported (BertPreTokenizer only)", path, typ)
	}
	n := len(j.Model.Vocab)
	for _, a := range j.AddedTokens {
		if _, ok := j.Model.Vocab[a.Content]; !ok {
			n++ // added tokens outside the model vocabulary follow it
		}
	}
	vocab := make([]string, n)
	set := func(tok string, id int32) error {
		if id < 0 || int(id) >= n {
			return fmt.Errorf("%s: token %q has id %d outside [0, %d)", path, tok, id, n)
		}
		if vocab[id] != "" && vocab[id] != tok {
			return fmt.Errorf("%s: id %d used by %q and %q", path, id, vocab[id], tok)
		}
		vocab[id] = tok
		return nil
	}
	for tok, id := range j.Model.Vocab {
		if err := set(tok, id); err != nil {
			return nil, err
		}
	}
	for _, a := range j.AddedTokens {
		if id, ok := j.Model.Vocab[a.Content]; ok && int(id) != a.ID {
			return nil, fmt.Errorf("%s: added token %q has id %d, vocab id %d", path, a.Content, a.ID, id)
		}
		if err := set(a.Content, int32(a.ID)); err != nil {
			return nil, err
		}
	}
	for i, tok := range vocab {
		if tok == "" {
			return nil, fmt.Errorf("%s: no token has id %d", path, i)
		}
	}
	nm := j.Normalizer
	t, err := newTokenizer(vocab, nm != nil && nm.Lowercase, path, nil)
	if err != nil {
		return nil, err
	}
	t.cleanText, t.chineseChars, t.stripAccents = false, false, false
	if nm != nil {
		t.cleanText, t.chineseChars, t.stripAccents = nm.CleanText, nm.HandleChineseChars, nm.Lowercase
		if nm.StripAccents != nil {
			t.stripAccents = *nm.StripAccents
		}
	}
	if len(j.AddedTokens) > 0 {
		t.specials = t.specials[:0]
		for _, a := range j.AddedTokens {
			t.specials = append(t.specials, a.Content)
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
	if err := t.postProcessor(j.PostProcessor); err != nil {
		return nil, fmt.Errorf("%s: post_processor: %w", path, err)
	}
	// The padding token, when the file names one (MPNet pads with <pad>, not [PAD]).
	if pd, ok := j.Padding.(map[string]any); ok {
		if tok, _ := pd["pad_token"].(string); tok != "" {
			id, ok := t.vocab[tok]
			if !ok {
				return nil, fmt.Errorf("%s: padding pad_token %q not in the vocabulary", path, tok)
			}
			t.pad = id
		}
	}
	return t, nil
}

// postProcessor checks that p adds BERT's [CLS] A [SEP] (B [SEP]) and takes its special ids:
// BertProcessing, or TemplateProcessing with that template; or RoBERTa's <s> A </s> (</s> B
// </s>): RobertaProcessing (MPNet's tokenizer), or TemplateProcessing with that template
// (XLM-RoBERTa's tokenizer.json).
func (t *Tokenizer) postProcessor(p map[string]any) error {
	typ, _ := p["type"].(string)
	lookup := func(tok string, id float64, hasID bool) (int32, error) {
		v, ok := t.vocab[tok]
		if !ok {
			return 0, fmt.Errorf("token %q not in the vocabulary", tok)
		}
		if hasID && int32(id) != v {
			return 0, fmt.Errorf("token %q has id %v, vocab id %d", tok, id, v)
		}
		return v, nil
	}
	switch typ {
	case "BertProcessing", "RobertaProcessing":
		var ids [2]int32
		for i, k := range []string{"cls", "sep"} {
			pair, _ := p[k].([]any)
			if len(pair) != 2 {
				return fmt.Errorf("%s %s: want [token, id], got %v", typ, k, p[k])
			}
			tok, _ := pair[0].(string)
			id, ok := pair[1].(float64)
			v, err := lookup(tok, id, ok)
			if err != nil {
				return err
			}
			ids[i] = v
		}
		t.cls, t.sep = ids[0], ids[1]
		if t.doubleSep = typ == "RobertaProcessing"; t.doubleSep {
			if id, ok := t.vocab["<mask>"]; ok {
				t.mask = id // RoBERTa's specials throughout
			}
		}
		return nil
	case "TemplateProcessing":
		piece := func(x any) (kind, id string, typeID float64) {
			m, _ := x.(map[string]any)
			for k, v := range m {
				f, _ := v.(map[string]any)
				id, _ = f["id"].(string)
				typeID, _ = f["type_id"].(float64)
				return k, id, typeID
			}
			return "", "", 0
		}
		// tmpl checks a template against want's kinds and returns its special tokens. The
		// second text (items from secondFrom on) has type 1 in BERT's template, 0 or 1 in
		// RoBERTa's (XLM-RoBERTa's tokenizer.json: every type 0).
		tmpl := func(key string, want []string, secondFrom int, anyType bool) ([]string, error) {
			items, _ := p[key].([]any)
			if len(items) != len(want) {
				return nil, fmt.Errorf("%s template %v is neither BERT's nor RoBERTa's", key, p[key])
			}
			var sp []string
			secondType := -1.0
			for i, x := range items {
				kind, id, ty := piece(x)
				seq := "A"
				wantTy := 0.0
				if i >= secondFrom {
					seq, wantTy = "B", 1
					if anyType {
						if secondType < 0 && (ty == 0 || ty == 1) {
							secondType = ty
						}
						wantTy = secondType
					}
				}
				if kind != want[i] || ty != wantTy || (kind == "Sequence" && id != seq) {
					return nil, fmt.Errorf("%s template %v is neither BERT's nor RoBERTa's", key, p[key])
				}
				if kind == "SpecialToken" {
					sp = append(sp, id)
				}
			}
			return sp, nil
		}
		single, err := tmpl("single", []string{"SpecialToken", "Sequence", "SpecialToken"}, 3, false)
		if err != nil {
			return err
		}
		var pair []string
		if items, _ := p["pair"].([]any); len(items) == 6 {
			// RoBERTa's <s> A </s> </s> B </s> (XLM-RoBERTa's converter writes it so).
			pair, err = tmpl("pair", []string{"SpecialToken", "Sequence", "SpecialToken", "SpecialToken", "Sequence", "SpecialToken"}, 3, true)
			if err == nil && (pair[0] != single[0] || pair[1] != single[1] || pair[2] != single[1] || pair[3] != single[1]) {
				err = fmt.Errorf("pair template specials %v differ from single %v", pair, single)
			}
			t.doubleSep = true
		} else {
			pair, err = tmpl("pair", []string{"SpecialToken", "Sequence", "SpecialToken", "Sequence", "SpecialToken"}, 3, false)
			if err == nil && (pair[0] != single[0] || pair[1] != single[1] || pair[2] != single[1]) {
				err = fmt.Errorf("pair template specials %v differ from single %v", pair, single)
			}
		}
		if err != nil {
			return err
		}
		specials, _ := p["special_tokens"].(map[string]any)
		var ids [2]int32
		for i, name := range single {
			sp, _ := specials[name].(map[string]any)
			toks, _ := sp["tokens"].([]any)
			idl, _ := sp["ids"].([]any)
			if len(toks) != 1 || len(idl) != 1 {
				return fmt.Errorf("special token %q: want one token and id, got %v", name, specials[name])
			}
			tok, _ := toks[0].(string)
			id, ok := idl[0].(float64)
			v, err := lookup(tok, id, ok)
			if err != nil {
				return err
			}
			ids[i] = v
		}
		t.cls, t.sep = ids[0], ids[1]
		if id, ok := t.vocab["<mask>"]; ok && t.doubleSep {
			t.mask = id
		}
		return nil
	case "":
		return fmt.Errorf("missing (toolret adds [CLS]/[SEP] and needs BertProcessing or TemplateProcessing)")
	}
	return fmt.Errorf("type %q is not supported (BertProcessing or TemplateProcessing only)", typ)
}

// Save writes tokenizer.json (HF format), vocab.txt, tokenizer_config.json and
// special_tokens_map.json into dir; a Unigram tokenizer writes no vocab.txt, and spm.model
// and added_tokens.json if it was read from an spm.model (saveUnigram).
func (t *Tokenizer) Save(dir string) error {
	if t.uni != nil {
		return t.saveUnigram(dir)
	}
	if t.bpe != nil {
		return t.saveBPE(dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	vocab := make(map[string]int32, len(t.inv))
	for i, tok := range t.inv {
		vocab[tok] = int32(i)
	}
	var added []addedToken
	for _, tok := range t.specials {
		sp := tok == PAD || tok == UNK || tok == CLS || tok == SEP || tok == MASK
		added = append(added, addedToken{ID: int(t.vocab[tok]), Content: tok, Special: sp})
	}
	strip := t.stripAccents
	var stripPtr *bool
	if strip != t.lower {
		stripPtr = &strip
	}
	j := jsonTokenizer{
		Version: "1.0", AddedTokens: added,
		Normalizer:   &jsonNormalizer{Type: "BertNormalizer", CleanText: t.cleanText, HandleChineseChars: t.chineseChars, StripAccents: stripPtr, Lowercase: t.lower},
		PreTokenizer: map[string]any{"type": "BertPreTokenizer"},
		PostProcessor: map[string]any{
			"type": "TemplateProcessing",
			"single": []any{
				map[string]any{"SpecialToken": map[string]any{"id": t.inv[t.cls], "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": t.inv[t.sep], "type_id": 0}},
			},
			"pair": []any{
				map[string]any{"SpecialToken": map[string]any{"id": t.inv[t.cls], "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": t.inv[t.sep], "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}},
				map[string]any{"SpecialToken": map[string]any{"id": t.inv[t.sep], "type_id": 1}},
			},
			"special_tokens": map[string]any{
				t.inv[t.cls]: map[string]any{"id": t.inv[t.cls], "ids": []int32{t.cls}, "tokens": []string{t.inv[t.cls]}},
				t.inv[t.sep]: map[string]any{"id": t.inv[t.sep], "ids": []int32{t.sep}, "tokens": []string{t.inv[t.sep]}},
			},
		},
		Decoder: map[string]any{"type": "WordPiece", "prefix": t.prefix, "cleanup": true},
		Model: jsonModel{Type: "WordPiece", UnkToken: t.inv[t.unk], ContinuingSubwordPrefix: t.prefix,
			MaxInputCharsPerWord: t.maxInputChars, Vocab: vocab},
	}
	if t.doubleSep {
		j.PostProcessor = map[string]any{"type": "RobertaProcessing", "cls": []any{t.inv[t.cls], t.cls},
			"sep": []any{t.inv[t.sep], t.sep}, "trim_offsets": true, "add_prefix_space": false}
		j.Padding = map[string]any{"strategy": "BatchLongest", "direction": "Right", "pad_id": t.pad,
			"pad_type_id": 0, "pad_token": t.inv[t.pad]}
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
	sp := map[string]string{"unk_token": t.inv[t.unk], "sep_token": t.inv[t.sep], "pad_token": t.inv[t.pad], "cls_token": t.inv[t.cls]}
	if t.mask >= 0 {
		sp["mask_token"] = t.inv[t.mask]
	}
	cfg := map[string]any{"do_lower_case": t.lower, "strip_accents": stripPtr, "tokenize_chinese_chars": t.chineseChars,
		"tokenizer_class": "BertTokenizer", "model_max_length": 512}
	if t.doubleSep {
		cfg["tokenizer_class"] = "MPNetTokenizer" // WordPiece with RoBERTa's specials
	}
	for k, v := range sp {
		cfg[k] = v
	}
	b, _ = json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), b, 0o644); err != nil {
		return err
	}
	b, _ = json.MarshalIndent(sp, "", "  ")
	return os.WriteFile(filepath.Join(dir, "special_tokens_map.json"), b, 0o644)
}

// VocabSize is the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.inv) }

// EmbeddingRows is the number of rows an embedding table needs for the ids the tokenizer
// gives ordinary text: VocabSize, less the added tokens of a BPE tokenizer.json above its
// vocabulary, its template's special tokens and its padding and unknown tokens. transformers
// appends such tokens to a tokenizer it saves (GemmaTokenizer's <mask>) without growing the
// model's embedding table, which has no row for them; a text that spells one out fails in
// transformers, and in toolret, for lack of that row.
func (t *Tokenizer) EmbeddingRows() int {
	if t.rows > 0 {
		return t.rows
	}
	return len(t.inv)
}

// LimitAdded stops t matching in text the added tokens whose ids are rows or more, which an
// embedding table of rows rows has none for (see EmbeddingRows): a text spelling one out is
// tokenized as plain text, where transformers fails (index out of range). Call it once the
// model is known, before t is used.
func (t *Tokenizer) LimitAdded(rows int) {
	if t.bpe == nil {
		return
	}
	keep := func(added []bpeAdded) []bpeAdded {
		var out []bpeAdded
		for _, a := range added {
			if int(a.id) < rows {
				out = append(out, a)
			}
		}
		return out
	}
	t.bpe.added, t.bpe.addedNorm = keep(t.bpe.added), keep(t.bpe.addedNorm)
}

// Vocab returns the tokens in id order (do not modify).
func (t *Tokenizer) Vocab() []string { return t.inv }

// PadID is the id of [PAD].
func (t *Tokenizer) PadID() int32 { return t.pad }

// MaskID is the id of [MASK], -1 if the vocabulary has none.
func (t *Tokenizer) MaskID() int32 { return t.mask }

// ID returns the id of token tok and whether it is in the vocabulary.
func (t *Tokenizer) ID(tok string) (int32, bool) {
	id, ok := t.vocab[tok]
	return id, ok
}

// Token returns the token of id, or "" when id is out of range.
func (t *Tokenizer) Token(id int32) string {
	if id < 0 || int(id) >= len(t.inv) {
		return ""
	}
	return t.inv[id]
}

// CLSID is the id of [CLS].
func (t *Tokenizer) CLSID() int32 { return t.cls }

// SEPID is the id of [SEP].
func (t *Tokenizer) SEPID() int32 { return t.sep }

// DoubleSep reports whether a pair is joined RoBERTa's way, two separators between its texts
// (<s> A </s></s> B </s>, MPNet's tokenizer) instead of BERT's one.
func (t *Tokenizer) DoubleSep() bool { return t.doubleSep }

// UNKID is the id of [UNK].
func (t *Tokenizer) UNKID() int32 { return t.unk }

// Lowercase reports whether the tokenizer lowercases.
func (t *Tokenizer) Lowercase() bool { return t.lower }
