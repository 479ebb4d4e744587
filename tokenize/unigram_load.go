package tokenize

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// FromSPM reads a SentencePiece Unigram model (spm.model), as DeBERTa-v3 ships it, with
// SentencePiece's own normalisation; see Load for the files read beside it.
func FromSPM(path string) (*Tokenizer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return loadSPM(filepath.Dir(path), path, b)
}

// newUnigramSPM builds the segmenter of a decoded spm.model.
func newUnigramSPM(m *spModel) (*unigram, error) {
	if m.modelType != 1 {
		return nil, fmt.Errorf("model_type %d is not supported (Unigram, 1, only)", m.modelType)
	}
	if m.byteFallback {
		return nil, fmt.Errorf("byte_fallback models are not supported")
	}
	if len(m.pieces) == 0 {
		return nil, fmt.Errorf("no pieces")
	}
	// SentencePiece's min_score_ starts at FLT_MAX, max_score_ at FLT_MIN (the smallest
	// normal float, so an all-negative model keeps max_score_ = FLT_MIN).
	u := &unigram{unk: -1, trie: newPieceTrie(), minScore: math.MaxFloat32, maxScore: 0x1p-126,
		addDummyPrefix: m.addDummyPrefix, removeExtraWS: m.removeExtraWS, escapeWS: m.escapeWS, wsSuffix: m.wsAsSuffix}
	seen := make(map[string]int, len(m.pieces))
	for i, p := range m.pieces {
		if p.piece == "" {
			return nil, fmt.Errorf("piece %d is empty", i)
		}
		if j, dup := seen[p.piece]; dup {
			return nil, fmt.Errorf("piece %d %q is already piece %d", i, p.piece, j)
		}
		seen[p.piece] = i
		switch p.typ {
		case pieceNormal, pieceUserDefined, pieceUnused:
			u.trie.add(p.piece, int32(i))
			if p.typ == pieceUserDefined {
				if u.userSyms == nil {
					t := newPieceTrie()
					u.userSyms = &t
				}
				u.userSyms.add(p.piece, int32(i))
			}
		case pieceUnknown:
			if u.unk >= 0 {
				return nil, fmt.Errorf("piece %d %q: unknown piece already defined (piece %d)", i, p.piece, u.unk)
			}
			u.unk = int32(i)
		case pieceControl:
		case pieceByte:
			return nil, fmt.Errorf("piece %d %q is a byte piece (byte_fallback is not supported)", i, p.piece)
		default:
			return nil, fmt.Errorf("piece %d %q has unknown type %d", i, p.piece, p.typ)
		}
		if p.typ == pieceNormal {
			u.minScore = min(u.minScore, p.score)
			u.maxScore = max(u.maxScore, p.score)
		}
		if math.IsNaN(float64(p.score)) {
			return nil, fmt.Errorf("piece %d %q has score NaN", i, p.piece)
		}
		u.pieces = append(u.pieces, p.piece)
		u.scores = append(u.scores, p.score)
		u.types = append(u.types, uint8(p.typ))
	}
	if u.unk < 0 {
		return nil, fmt.Errorf("no unknown (UNKNOWN-type) piece")
	}
	if len(m.charsmap) > 0 {
		cm, err := parseCharsmap(m.charsmap, false)
		if err != nil {
			return nil, err
		}
		u.cm = cm
	}
	return u, nil
}

// hfTokenConfig is the part of tokenizer_config.json read beside spm.model.
type hfTokenConfig struct {
	DoLowerCase  *bool `json:"do_lower_case"`
	SplitByPunct bool  `json:"split_by_punct"`
	AddedDecoder map[string]struct {
		Content string `json:"content"`
	} `json:"added_tokens_decoder"`
}

// tokenName reads a special token entry of tokenizer_config.json or special_tokens_map.json:
// a string or an AddedToken object {"content": ...}.
func tokenName(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Content
	}
	return ""
}

// loadSPM builds a tokenizer from spm.model bytes b (path names it in errors) and the HF
// files beside it in dir: tokenizer_config.json (do_lower_case, the special token names,
// added_tokens_decoder) and added_tokens.json (tokens after the pieces, such as DeBERTa-v3's
// [MASK] = 128000). Special token names default to DeBERTa-v3's [CLS] [SEP] [PAD] [UNK]
// [MASK]; a mask token in neither the pieces nor the added tokens gets the next id, as HF
// adds it.
func loadSPM(dir, path string, b []byte) (*Tokenizer, error) {
	m, err := parseSPModel(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	u, err := newUnigramSPM(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	names := map[string]string{"cls_token": CLS, "sep_token": SEP, "pad_token": PAD, "unk_token": UNK, "mask_token": MASK}
	var cfg hfTokenConfig
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	if cb, err := os.ReadFile(cfgPath); err == nil {
		if err := json.Unmarshal(cb, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", cfgPath, err)
		}
		var all map[string]json.RawMessage
		_ = json.Unmarshal(cb, &all)
		for k := range names {
			if raw, ok := all[k]; ok {
				if s := tokenName(raw); s != "" {
					names[k] = s
				}
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if cfg.SplitByPunct {
		return nil, fmt.Errorf("%s: split_by_punct is not supported with spm.model (a tokenizer.json with a Punctuation pre-tokenizer is)", cfgPath)
	}
	u.lower = cfg.DoLowerCase != nil && *cfg.DoLowerCase

	vocab := append([]string(nil), u.pieces...)
	index := make(map[string]int32, len(vocab)+4)
	for i, p := range vocab {
		index[p] = int32(i)
	}
	// Added tokens: added_tokens.json, then added_tokens_decoder, then a missing mask token.
	added := map[int]string{}
	addPath := filepath.Join(dir, "added_tokens.json")
	if ab, err := os.ReadFile(addPath); err == nil {
		var at map[string]int
		if err := json.Unmarshal(ab, &at); err != nil {
			return nil, fmt.Errorf("%s: %w", addPath, err)
		}
		for tok, id := range at {
			added[id] = tok
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for k, v := range cfg.AddedDecoder {
		id, err := strconv.Atoi(k)
		if err != nil {
			return nil, fmt.Errorf("%s: added_tokens_decoder key %q is not an id", cfgPath, k)
		}
		if prev, ok := added[id]; ok && prev != v.Content {
			return nil, fmt.Errorf("%s: added_tokens_decoder id %d is %q, added_tokens.json has %q", cfgPath, id, v.Content, prev)
		}
		added[id] = v.Content
	}
	ids := make([]int, 0, len(added))
	for id := range added {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	var extra []string
	for _, id := range ids {
		tok := added[id]
		if tok == "" {
			return nil, fmt.Errorf("%s: added token %d is empty", dir, id)
		}
		if id < len(vocab) {
			if vocab[id] != tok {
				return nil, fmt.Errorf("%s: added token %q has id %d, which is piece %q", dir, tok, id, vocab[id])
			}
			continue
		}
		if id != len(vocab) {
			return nil, fmt.Errorf("%s: added token %q has id %d, want %d (ids follow the %d pieces without gaps)", dir, tok, id, len(vocab), len(u.pieces))
		}
		if j, dup := index[tok]; dup {
			return nil, fmt.Errorf("%s: added token %q (id %d) is already id %d", dir, tok, id, j)
		}
		index[tok] = int32(id)
		vocab = append(vocab, tok)
		extra = append(extra, tok)
	}
	if _, ok := index[names["mask_token"]]; !ok {
		index[names["mask_token"]] = int32(len(vocab))
		vocab = append(vocab, names["mask_token"])
		extra = append(extra, names["mask_token"])
	}
	t := &Tokenizer{vocab: index, inv: vocab, lower: u.lower, uni: u, spm: b}
	for _, sp := range []struct {
		key string
		id  *int32
	}{{"cls_token", &t.cls}, {"sep_token", &t.sep}, {"pad_token", &t.pad}, {"unk_token", &t.unk}, {"mask_token", &t.mask}} {
		id, ok := index[names[sp.key]]
		if !ok {
			return nil, fmt.Errorf("%s: %s %q is not a piece", path, sp.key, names[sp.key])
		}
		*sp.id = id
	}
	if t.unk != u.unk {
		return nil, fmt.Errorf("%s: unk_token %q is id %d, the model's unknown piece is %d %q", path, names["unk_token"], t.unk, u.unk, u.pieces[u.unk])
	}
	// Matched literally in raw text, as HF's DebertaV2Tokenizer does with its special and
	// added tokens.
	for _, k := range []string{"pad_token", "cls_token", "sep_token", "unk_token", "mask_token"} {
		t.specials = appendUnique(t.specials, names[k])
	}
	for _, tok := range extra {
		t.specials = appendUnique(t.specials, tok)
	}
	return t, nil
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// tokenizer.json with a Unigram model.

type uniJSON struct {
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor map[string]any  `json:"post_processor"`
	Padding       *hfPadding      `json:"padding"`
	Model         struct {
		Type         string     `json:"type"`
		UnkID        *int       `json:"unk_id"`
		Vocab        []uniEntry `json:"vocab"`
		ByteFallback bool       `json:"byte_fallback"`
	} `json:"model"`
}

// uniEntry is one [piece, score] pair of a Unigram vocabulary.
type uniEntry struct {
	Piece string
	Score float64
}

func (e *uniEntry) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	if len(pair) != 2 {
		return fmt.Errorf("vocabulary entry %s is not [piece, score]", truncate(b))
	}
	if err := json.Unmarshal(pair[0], &e.Piece); err != nil {
		return fmt.Errorf("vocabulary entry %s: %w", truncate(b), err)
	}
	if err := json.Unmarshal(pair[1], &e.Score); err != nil {
		return fmt.Errorf("vocabulary entry %s: %w", truncate(b), err)
	}
	return nil
}

func (e uniEntry) MarshalJSON() ([]byte, error) {
	p, _ := json.Marshal(e.Piece)
	s := strconv.FormatFloat(e.Score, 'g', -1, 64)
	if e.Score == math.Trunc(e.Score) && !math.IsInf(e.Score, 0) && math.Abs(e.Score) < 1e21 {
		s = strconv.FormatFloat(e.Score, 'f', 1, 64)
	}
	return []byte("[" + string(p) + "," + s + "]"), nil
}

func truncate(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "..."
	}
	return string(b)
}

// parseUnigramJSON reads a tokenizer.json whose model is Unigram, with HF tokenizers'
// semantics: normalizers Sequence, Precompiled, Strip, Replace (string or regex), NFC, NFD,
// NFKC, NFKD, Lowercase; pre-tokenizers Metaspace (prepend_scheme always or never, or the
// older add_prefix_space) optionally after Punctuation (isolated) and WhitespaceSplit (as
// transformers 5 writes XLM-RoBERTa's), in a Sequence; post processor BertProcessing, or
// TemplateProcessing with BERT's template or RoBERTa's (<s> A </s> </s> B </s>).
func parseUnigramJSON(path string, b []byte) (*Tokenizer, error) {
	var j uniJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m := j.Model
	if m.ByteFallback {
		return nil, fmt.Errorf("%s: model: byte_fallback is not supported", path)
	}
	if len(m.Vocab) == 0 {
		return nil, fmt.Errorf("%s: model: empty vocabulary", path)
	}
	if m.UnkID == nil || *m.UnkID < 0 || *m.UnkID >= len(m.Vocab) {
		return nil, fmt.Errorf("%s: model: unk_id %v missing or outside the %d pieces", path, m.UnkID, len(m.Vocab))
	}
	u := &unigram{hf: true, unk: int32(*m.UnkID), trie: newPieceTrie(), hfMin: math.Inf(1),
		tokIndex: make(map[string]int32, len(m.Vocab))}
	for i, e := range m.Vocab {
		if prev, dup := u.tokIndex[e.Piece]; dup {
			return nil, fmt.Errorf("%s: model: vocabulary entry %d %q is already entry %d", path, i, e.Piece, prev)
		}
		if math.IsNaN(e.Score) {
			return nil, fmt.Errorf("%s: model: vocabulary entry %d %q has score NaN", path, i, e.Piece)
		}
		u.tokIndex[e.Piece] = int32(i)
		u.pieces = append(u.pieces, e.Piece)
		u.score = append(u.score, e.Score)
		u.hfMin = min(u.hfMin, e.Score)
		if e.Piece != "" {
			u.trie.add(e.Piece, int32(i))
		}
	}
	if err := u.hfNormalizer(j.Normalizer, 0); err != nil {
		return nil, fmt.Errorf("%s: normalizer: %w", path, err)
	}
	if err := u.hfPreTokenizer(j.PreTokenizer, 0); err != nil {
		return nil, fmt.Errorf("%s: pre_tokenizer: %w", path, err)
	}

	n := len(u.pieces)
	for _, a := range j.AddedTokens {
		if _, ok := u.tokIndex[a.Content]; !ok {
			n++
		}
	}
	vocab := make([]string, n)
	filled := make([]bool, n)
	index := make(map[string]int32, n)
	copy(vocab, u.pieces)
	for i, p := range u.pieces {
		filled[i] = true
		index[p] = int32(i)
	}
	for _, a := range j.AddedTokens {
		if a.Content == "" {
			return nil, fmt.Errorf("%s: added token %d is empty", path, a.ID)
		}
		if id, ok := u.tokIndex[a.Content]; ok {
			if int(id) != a.ID {
				return nil, fmt.Errorf("%s: added token %q has id %d, vocab id %d", path, a.Content, a.ID, id)
			}
			continue
		}
		if a.ID < len(u.pieces) || a.ID >= n {
			return nil, fmt.Errorf("%s: added token %q has id %d outside [%d, %d)", path, a.Content, a.ID, len(u.pieces), n)
		}
		if filled[a.ID] {
			return nil, fmt.Errorf("%s: id %d used by %q and %q", path, a.ID, vocab[a.ID], a.Content)
		}
		if prev, dup := index[a.Content]; dup {
			return nil, fmt.Errorf("%s: added token %q has ids %d and %d", path, a.Content, prev, a.ID)
		}
		vocab[a.ID], filled[a.ID] = a.Content, true
		index[a.Content] = int32(a.ID)
	}
	for i, ok := range filled {
		if !ok {
			return nil, fmt.Errorf("%s: no token has id %d", path, i)
		}
	}
	t := &Tokenizer{vocab: index, inv: vocab, uni: u, unk: u.unk, mask: -1, pad: -1, uniCfg: &j}
	if !t.setSpecials(j.AddedTokens, j.Padding, n, []string{PAD, "<pad>"}) {
		return nil, fmt.Errorf("%s: no padding token ([PAD], <pad> or padding.pad_id)", path)
	}
	if err := t.postProcessor(j.PostProcessor); err != nil {
		return nil, fmt.Errorf("%s: post_processor: %w", path, err)
	}
	return t, nil
}

func (u *unigram) hfNormalizer(raw json.RawMessage, depth int) error {
	return normalizers{steps: &u.norms, lower: &u.lower, other: func(n *normJSON) (bool, error) {
		if n.Type != "Precompiled" {
			return false, nil
		}
		if n.Charsmap == nil || *n.Charsmap == "" {
			return true, nil // HF treats an empty charsmap as no rules
		}
		blob, err := base64.StdEncoding.DecodeString(*n.Charsmap)
		if err != nil {
			return true, fmt.Errorf("Precompiled: precompiled_charsmap: %w", err)
		}
		cm, err := parseCharsmap(blob, true)
		if err != nil {
			return true, fmt.Errorf("Precompiled: %w", err)
		}
		u.norms = append(u.norms, cm.hfNormalize)
		u.cm = cm
		return true, nil
	}, model: "a Unigram model (Sequence, Precompiled, Strip, Replace, NFC, NFD, NFKC, NFKD, Lowercase)"}.parse(raw, depth)
}

func (u *unigram) hfPreTokenizer(raw json.RawMessage, depth int) error {
	var p struct {
		Type           string            `json:"type"`
		Pretokenizers  []json.RawMessage `json:"pretokenizers"`
		Replacement    string            `json:"replacement"`
		PrependScheme  string            `json:"prepend_scheme"`
		AddPrefixSpace *bool             `json:"add_prefix_space"`
		Split          *bool             `json:"split"`
		Behavior       string            `json:"behavior"`
	}
	if ok, err := decodeStep(raw, depth, &p); !ok || err != nil {
		return err
	}
	switch p.Type {
	case "Sequence":
		return eachInSequence(p.Pretokenizers, depth, u.hfPreTokenizer)
	case "Punctuation":
		if u.metaRep != "" {
			return fmt.Errorf("Punctuation after Metaspace is not supported")
		}
		if p.Behavior != "" && p.Behavior != "Isolated" && p.Behavior != "isolated" {
			return fmt.Errorf("Punctuation behavior %q is not supported (Isolated only)", p.Behavior)
		}
		u.punct = true
	case "WhitespaceSplit":
		if u.metaRep != "" {
			return fmt.Errorf("WhitespaceSplit after Metaspace is not supported")
		}
		u.wsSplit = true
	case "Metaspace":
		if u.metaRep != "" {
			return fmt.Errorf("more than one Metaspace")
		}
		if r := []rune(p.Replacement); len(r) != 1 {
			return fmt.Errorf("Metaspace replacement %q is not one character", p.Replacement)
		}
		u.metaRep = p.Replacement
		switch {
		case p.PrependScheme == "always", p.PrependScheme == "" && (p.AddPrefixSpace == nil || *p.AddPrefixSpace):
			u.prepend = true
		case p.PrependScheme == "never", p.PrependScheme == "" && !*p.AddPrefixSpace:
		default:
			return fmt.Errorf("Metaspace prepend_scheme %q is not supported (always or never)", p.PrependScheme)
		}
		u.split = p.Split == nil || *p.Split
	default:
		return fmt.Errorf("type %q is not supported with a Unigram model (Metaspace, Punctuation, WhitespaceSplit, Sequence)", p.Type)
	}
	return nil
}

// saveUnigram writes tokenizer.json in HF's format (as transformers' DebertaV2Converter
// makes it from an spm.model: Strip, Precompiled, Replace("  +", " ") normalizers, Metaspace,
// BERT's template), tokenizer_config.json, special_tokens_map.json, and spm.model with
// added_tokens.json when the tokenizer was read from an spm.model.
func (t *Tokenizer) saveUnigram(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	u := t.uni
	vocab := make([]uniEntry, len(u.pieces))
	for i, p := range u.pieces {
		if u.hf {
			vocab[i] = uniEntry{p, u.score[i]}
		} else {
			vocab[i] = uniEntry{p, float64(u.scores[i])}
		}
	}
	var added []addedToken
	for _, tok := range t.specials {
		added = append(added, addedToken{ID: int(t.vocab[tok]), Content: tok, Special: true})
	}
	sort.Slice(added, func(a, b int) bool { return added[a].ID < added[b].ID })
	var normalizer, preTok, decoder any
	if u.hf && t.uniCfg != nil {
		normalizer, preTok = t.uniCfg.Normalizer, t.uniCfg.PreTokenizer
		decoder = map[string]any{"type": "Metaspace", "replacement": u.metaRep, "prepend_scheme": "always", "split": true}
		if !u.prepend {
			decoder.(map[string]any)["prepend_scheme"] = "never"
		}
	} else {
		var steps []any
		if u.lower {
			steps = append(steps, map[string]any{"type": "Lowercase"})
		}
		if u.removeExtraWS {
			steps = append(steps, map[string]any{"type": "Strip", "strip_left": true, "strip_right": true})
		}
		if u.cm != nil {
			steps = append(steps, map[string]any{"type": "Precompiled", "precompiled_charsmap": base64.StdEncoding.EncodeToString(u.cm.raw)})
		}
		if u.removeExtraWS {
			steps = append(steps, map[string]any{"type": "Replace", "pattern": map[string]any{"Regex": " {2,}"}, "content": " "})
		}
		normalizer = map[string]any{"type": "Sequence", "normalizers": steps}
		scheme := "always"
		if !u.addDummyPrefix {
			scheme = "never"
		}
		meta := map[string]any{"type": "Metaspace", "replacement": spaceSymbol, "prepend_scheme": scheme, "split": true}
		preTok = map[string]any{"type": "Sequence", "pretokenizers": []any{meta}}
		decoder = meta
	}
	// The post-processor read (XLM-RoBERTa's <s> A </s> </s> B </s>) is kept; an spm.model's
	// is BERT's template.
	var post any = t.bertTemplate()
	if t.doubleSep && t.uniCfg != nil && t.uniCfg.PostProcessor != nil {
		post = t.uniCfg.PostProcessor
	}
	j := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": normalizer, "pre_tokenizer": preTok, "post_processor": post, "decoder": decoder,
		"model": map[string]any{"type": "Unigram", "unk_id": u.unk, "vocab": vocab, "byte_fallback": false},
	}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
		return err
	}
	if t.spm != nil {
		if err := os.WriteFile(filepath.Join(dir, "spm.model"), t.spm, 0o644); err != nil {
			return err
		}
		extra := map[string]int{}
		for id := len(u.pieces); id < len(t.inv); id++ {
			extra[t.inv[id]] = id
		}
		b, _ = json.MarshalIndent(extra, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "added_tokens.json"), b, 0o644); err != nil {
			return err
		}
	}
	sp := map[string]string{"unk_token": t.inv[t.unk], "sep_token": t.inv[t.sep], "pad_token": t.inv[t.pad],
		"cls_token": t.inv[t.cls], "bos_token": t.inv[t.cls], "eos_token": t.inv[t.sep]}
	if t.mask >= 0 {
		sp["mask_token"] = t.inv[t.mask]
	}
	cfg := map[string]any{"do_lower_case": u.lower, "split_by_punct": u.punct, "vocab_type": "spm",
		"tokenizer_class": "DebertaV2Tokenizer", "model_max_length": 512}
	if t.doubleSep {
		// RoBERTa's specials around a SentencePiece Unigram model: XLM-RoBERTa's tokenizer.
		cfg = map[string]any{"tokenizer_class": "XLMRobertaTokenizer", "model_max_length": 512}
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

// bertTemplate is the TemplateProcessing post-processor [CLS] $A [SEP] ($B [SEP]).
func (t *Tokenizer) bertTemplate() map[string]any {
	cls, sep := t.inv[t.cls], t.inv[t.sep]
	item := func(kind, id string, ty int) map[string]any {
		return map[string]any{kind: map[string]any{"id": id, "type_id": ty}}
	}
	return map[string]any{
		"type":   "TemplateProcessing",
		"single": []any{item("SpecialToken", cls, 0), item("Sequence", "A", 0), item("SpecialToken", sep, 0)},
		"pair": []any{item("SpecialToken", cls, 0), item("Sequence", "A", 0), item("SpecialToken", sep, 0),
			item("Sequence", "B", 1), item("SpecialToken", sep, 1)},
		"special_tokens": map[string]any{
			cls: map[string]any{"id": cls, "ids": []int32{t.cls}, "tokens": []string{cls}},
			sep: map[string]any{"id": sep, "ids": []int32{t.sep}, "tokens": []string{sep}},
		},
	}
}
