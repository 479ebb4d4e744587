package tokenize

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// bpeJSON is the part of a tokenizer.json with a BPE model that toolret reads.
type bpeJSON struct {
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Padding       *hfPadding      `json:"padding"`
	Model         struct {
		Type                    string            `json:"type"`
		Dropout                 *float64          `json:"dropout"`
		UnkToken                *string           `json:"unk_token"`
		ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
		FuseUnk                 bool              `json:"fuse_unk"`
		ByteFallback            bool              `json:"byte_fallback"`
		IgnoreMerges            bool              `json:"ignore_merges"`
		Vocab                   map[string]int32  `json:"vocab"`
		Merges                  []json.RawMessage `json:"merges"`
	} `json:"model"`
}

// template is a post-processor's layout of one text (single) or two (pair): special tokens
// around the sequences, with their token types (HF's TemplateProcessing; BertProcessing and
// RobertaProcessing are written as one).
type template struct {
	single, pair []tmplItem
}

// tmplItem is a run of special ids (seq 0) or sequence A (seq 1) or B (seq 2).
type tmplItem struct {
	seq    int
	ids    []int32
	typeID int32
}

// specials is the number of special ids in items.
func specialsIn(items []tmplItem) int {
	n := 0
	for _, it := range items {
		n += len(it.ids)
	}
	return n
}

// parseBPEJSON reads a tokenizer.json whose model is BPE, with HF tokenizers' semantics:
// normalizers Sequence, NFC, NFD, NFKC, NFKD, Replace, Prepend, Lowercase, Strip;
// pre-tokenizers Sequence, Split (string or regex pattern, every behavior, invert) and
// ByteLevel (add_prefix_space, use_regex); the BPE model with its merges (as "a b" strings or
// ["a", "b"] lists), unk_token, fuse_unk, byte_fallback and ignore_merges; added tokens
// (single_word, lstrip, rstrip, normalized); post-processors TemplateProcessing,
// BertProcessing, RobertaProcessing, ByteLevel or a Sequence of them, or none.
func parseBPEJSON(path string, raw []byte) (*Tokenizer, error) {
	var j bpeJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m := &j.Model
	switch {
	case m.Dropout != nil && *m.Dropout > 0:
		return nil, fmt.Errorf("%s: model: dropout %v is not supported (training-time only)", path, *m.Dropout)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "":
		return nil, fmt.Errorf("%s: model: continuing_subword_prefix %q is not supported", path, *m.ContinuingSubwordPrefix)
	case m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return nil, fmt.Errorf("%s: model: end_of_word_suffix %q is not supported", path, *m.EndOfWordSuffix)
	case len(m.Vocab) == 0:
		return nil, fmt.Errorf("%s: model: empty vocabulary", path)
	}
	b := &bpe{vocab: m.Vocab, merges: make(map[uint64]bpeMerge, len(m.Merges)), unk: -1,
		fuseUnk: m.FuseUnk, byteFallback: m.ByteFallback, ignoreMerges: m.IgnoreMerges,
		cache: map[string][]int32{}}
	if m.UnkToken != nil {
		id, ok := m.Vocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("%s: model: unk_token %q not in the vocabulary", path, *m.UnkToken)
		}
		b.unk = id
	}
	for i := range b.byteIDs {
		b.byteIDs[i] = -1
		if id, ok := m.Vocab[fmt.Sprintf("<0x%02X>", i)]; ok {
			b.byteIDs[i] = id
		}
	}
	for i, rm := range m.Merges {
		var l, r, str string
		var pair []string
		if err := json.Unmarshal(rm, &str); err == nil {
			var ok bool
			if l, r, ok = strings.Cut(str, " "); !ok || strings.Contains(r, " ") {
				return nil, fmt.Errorf("%s: model: merge %d %q is not two tokens separated by one space", path, i, str)
			}
		} else if err := json.Unmarshal(rm, &pair); err == nil && len(pair) == 2 {
			l, r = pair[0], pair[1]
		} else {
			return nil, fmt.Errorf("%s: model: merge %d %s is neither \"a b\" nor [\"a\", \"b\"]", path, i, truncate(rm))
		}
		li, ok1 := m.Vocab[l]
		ri, ok2 := m.Vocab[r]
		id, ok3 := m.Vocab[l+r]
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("%s: model: merge %d (%q, %q): a token is not in the vocabulary", path, i, l, r)
		}
		b.merges[pairKey(li, ri)] = bpeMerge{rank: int32(i), id: id} // a later duplicate wins, as in HF
	}
	if err := b.normalizer(j.Normalizer, 0); err != nil {
		return nil, fmt.Errorf("%s: normalizer: %w", path, err)
	}
	if err := b.preTokenizer(j.PreTokenizer, 0); err != nil {
		return nil, fmt.Errorf("%s: pre_tokenizer: %w", path, err)
	}

	// The vocabulary: the model's tokens and the added ones, ids 0..n-1 without gaps.
	index := make(map[string]int32, len(m.Vocab)+len(j.AddedTokens))
	n := 0
	for tok, id := range m.Vocab {
		index[tok] = id
		n = max(n, int(id)+1)
	}
	for _, a := range j.AddedTokens {
		if a.Content == "" {
			return nil, fmt.Errorf("%s: added token %d is empty", path, a.ID)
		}
		if id, ok := index[a.Content]; ok && int(id) != a.ID {
			return nil, fmt.Errorf("%s: added token %q has id %d, vocabulary id %d", path, a.Content, a.ID, id)
		}
		if a.ID < 0 {
			return nil, fmt.Errorf("%s: added token %q has id %d", path, a.Content, a.ID)
		}
		index[a.Content] = int32(a.ID)
		n = max(n, a.ID+1)
	}
	inv := make([]string, n)
	filled := make([]bool, n)
	for tok, id := range index {
		if id < 0 {
			return nil, fmt.Errorf("%s: token %q has id %d", path, tok, id)
		}
		if filled[id] {
			return nil, fmt.Errorf("%s: id %d used by %q and %q", path, id, inv[id], tok)
		}
		inv[id], filled[id] = tok, true
	}
	for i, ok := range filled {
		if !ok {
			return nil, fmt.Errorf("%s: no token has id %d", path, i)
		}
	}
	t := &Tokenizer{vocab: index, inv: inv, bpe: b, unk: b.unk, mask: -1, pad: -1, bpeJSON: raw, lower: b.lower}
	for _, a := range j.AddedTokens {
		ad := bpeAdded{content: a.Content, id: int32(a.ID), singleWord: a.SingleWord, lstrip: a.Lstrip, rstrip: a.Rstrip}
		if a.Normalized {
			// HF matches a normalized added token in the normalized text, by its normalized form.
			for _, f := range b.norms {
				ad.content = f(ad.content)
			}
			if ad.content != "" {
				b.addedNorm = append(b.addedNorm, ad)
			}
		} else {
			b.added = append(b.added, ad)
		}
	}
	if !t.setSpecials(j.AddedTokens, j.Padding, n, []string{PAD, "<pad>", "<|padding|>", "<|endoftext|>"}) {
		return nil, fmt.Errorf("%s: no padding token (padding.pad_token, [PAD], <pad>, <|padding|> or <|endoftext|>)", path)
	}
	tm, err := t.parseTemplate(j.PostProcessor, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: post_processor: %w", path, err)
	}
	if tm == nil {
		tm = &template{single: []tmplItem{{seq: 1}}, pair: []tmplItem{{seq: 1}, {seq: 2, typeID: 1}}}
	}
	t.tmpl = tm
	// [CLS] and [SEP] stand for the first and last special tokens of the single template.
	t.cls, t.sep = -1, -1
	for _, it := range tm.single {
		for _, id := range it.ids {
			if t.cls < 0 {
				t.cls = id
			}
			t.sep = id
		}
	}
	// EmbeddingRows: the vocabulary's ids, the templates', padding and unknown.
	rows := 1 + max(int(t.pad), int(t.unk))
	for _, id := range m.Vocab {
		rows = max(rows, int(id)+1)
	}
	for _, items := range [][]tmplItem{tm.single, tm.pair} {
		for _, it := range items {
			for _, id := range it.ids {
				rows = max(rows, int(id)+1)
			}
		}
	}
	t.rows = rows
	return t, nil
}

func (b *bpe) normalizer(raw json.RawMessage, depth int) error {
	return normalizers{steps: &b.norms, lower: &b.lower, other: func(n *normJSON) (bool, error) {
		if n.Type != "Prepend" {
			return false, nil
		}
		pre := n.Prepend
		b.norms = append(b.norms, func(s string) string {
			if s == "" {
				return s
			}
			return pre + s
		})
		return true, nil
	}, model: "a BPE model (Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace)"}.parse(raw, depth)
}

func (b *bpe) preTokenizer(raw json.RawMessage, depth int) error {
	var p struct {
		Type           string            `json:"type"`
		Pretokenizers  []json.RawMessage `json:"pretokenizers"`
		AddPrefixSpace bool              `json:"add_prefix_space"`
		UseRegex       *bool             `json:"use_regex"`
		Pattern        struct {
			String *string `json:"String"`
			Regex  *string `json:"Regex"`
		} `json:"pattern"`
		Behavior string `json:"behavior"`
		Invert   bool   `json:"invert"`
	}
	if ok, err := decodeStep(raw, depth, &p); !ok || err != nil {
		return err
	}
	switch p.Type {
	case "Sequence":
		return eachInSequence(p.Pretokenizers, depth, b.preTokenizer)
	case "ByteLevel":
		var find func(string) [][2]int
		if p.UseRegex == nil || *p.UseRegex {
			find, _ = knownSplitter(gpt2Pattern)
		}
		b.pre = append(b.pre, byteLevelStep(p.AddPrefixSpace, find))
	case "Split":
		behavior, ok := map[string]splitBehavior{"Removed": splitRemoved, "Isolated": splitIsolated,
			"MergedWithPrevious": splitMergedWithPrevious, "MergedWithNext": splitMergedWithNext,
			"Contiguous": splitContiguous}[p.Behavior]
		if !ok {
			return fmt.Errorf("Split: behavior %q is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous", p.Behavior)
		}
		var find func(string) [][2]int
		switch {
		case p.Pattern.String != nil:
			find = literalFinder(*p.Pattern.String)
		case p.Pattern.Regex != nil:
			var ok bool
			if find, ok = knownSplitter(*p.Pattern.Regex); !ok {
				re, err := compileHFRegex(*p.Pattern.Regex)
				if err != nil {
					return fmt.Errorf("Split: %w", err)
				}
				find = re.find
			}
		default:
			return fmt.Errorf("Split: pattern must be a String or a Regex")
		}
		b.pre = append(b.pre, splitStep(find, behavior, p.Invert))
	default:
		return fmt.Errorf("type %q is not supported with a BPE model (Sequence, Split, ByteLevel)", p.Type)
	}
	return nil
}

// parseTemplate reads a post-processor as a template; nil when it adds nothing (none, or
// ByteLevel alone).
func (t *Tokenizer) parseTemplate(raw json.RawMessage, depth int) (*template, error) {
	var p struct {
		Type       string            `json:"type"`
		Processors []json.RawMessage `json:"processors"`
		Single     []map[string]struct {
			ID     string `json:"id"`
			TypeID int32  `json:"type_id"`
		} `json:"single"`
		Pair          json.RawMessage `json:"pair"`
		SpecialTokens map[string]struct {
			IDs    []int32  `json:"ids"`
			Tokens []string `json:"tokens"`
		} `json:"special_tokens"`
		Cls []any `json:"cls"`
		Sep []any `json:"sep"`
	}
	if ok, err := decodeStep(raw, depth, &p); !ok || err != nil {
		return nil, err
	}
	lookup := func(what string, pair []any) (int32, error) {
		if len(pair) != 2 {
			return 0, fmt.Errorf("%s %s: want [token, id], got %v", p.Type, what, pair)
		}
		tok, _ := pair[0].(string)
		id, ok := pair[1].(float64)
		v, in := t.vocab[tok]
		if !in {
			return 0, fmt.Errorf("%s %s: token %q not in the vocabulary", p.Type, what, tok)
		}
		if ok && int32(id) != v {
			return 0, fmt.Errorf("%s %s: token %q has id %v, vocabulary id %d", p.Type, what, tok, id, v)
		}
		return v, nil
	}
	switch p.Type {
	case "ByteLevel":
		return nil, nil
	case "Sequence":
		var out *template
		for i, r := range p.Processors {
			tm, err := t.parseTemplate(r, depth+1)
			if err != nil {
				return nil, fmt.Errorf("Sequence item %d: %w", i, err)
			}
			if tm != nil {
				if out != nil {
					return nil, fmt.Errorf("Sequence: more than one processor adds special tokens")
				}
				out = tm
			}
		}
		return out, nil
	case "BertProcessing", "RobertaProcessing":
		cls, err := lookup("cls", p.Cls)
		if err != nil {
			return nil, err
		}
		sep, err := lookup("sep", p.Sep)
		if err != nil {
			return nil, err
		}
		tm := &template{single: []tmplItem{{ids: []int32{cls}}, {seq: 1}, {ids: []int32{sep}}}}
		if p.Type == "BertProcessing" {
			tm.pair = []tmplItem{{ids: []int32{cls}}, {seq: 1}, {ids: []int32{sep}}, {seq: 2, typeID: 1}, {ids: []int32{sep}, typeID: 1}}
		} else {
			t.doubleSep = true
			tm.pair = []tmplItem{{ids: []int32{cls}}, {seq: 1}, {ids: []int32{sep}}, {ids: []int32{sep}, typeID: 1},
				{seq: 2, typeID: 1}, {ids: []int32{sep}, typeID: 1}}
		}
		return tm, nil
	case "TemplateProcessing":
		items := func(key string, list []map[string]struct {
			ID     string `json:"id"`
			TypeID int32  `json:"type_id"`
		}) ([]tmplItem, error) {
			var out []tmplItem
			for i, x := range list {
				if len(x) != 1 {
					return nil, fmt.Errorf("%s item %d: want one of Sequence or SpecialToken", key, i)
				}
				for kind, v := range x {
					switch kind {
					case "Sequence":
						switch v.ID {
						case "A":
							out = append(out, tmplItem{seq: 1, typeID: v.TypeID})
						case "B":
							out = append(out, tmplItem{seq: 2, typeID: v.TypeID})
						default:
							return nil, fmt.Errorf("%s item %d: sequence %q (A or B)", key, i, v.ID)
						}
					case "SpecialToken":
						sp, ok := p.SpecialTokens[v.ID]
						if !ok || len(sp.IDs) == 0 || len(sp.IDs) != len(sp.Tokens) {
							return nil, fmt.Errorf("%s item %d: special token %q missing from special_tokens or without ids", key, i, v.ID)
						}
						for k, id := range sp.IDs {
							if vid, in := t.vocab[sp.Tokens[k]]; !in || vid != id {
								return nil, fmt.Errorf("special token %q: token %q is not id %d in the vocabulary", v.ID, sp.Tokens[k], id)
							}
						}
						out = append(out, tmplItem{ids: sp.IDs, typeID: v.TypeID})
					default:
						return nil, fmt.Errorf("%s item %d: %q (Sequence or SpecialToken)", key, i, kind)
					}
				}
			}
			return out, nil
		}
		single, err := items("single", p.Single)
		if err != nil {
			return nil, err
		}
		var pairList []map[string]struct {
			ID     string `json:"id"`
			TypeID int32  `json:"type_id"`
		}
		if len(p.Pair) > 0 && string(p.Pair) != "null" {
			if err := json.Unmarshal(p.Pair, &pairList); err != nil {
				return nil, fmt.Errorf("pair: %w", err)
			}
		}
		pair, err := items("pair", pairList)
		if err != nil {
			return nil, err
		}
		if countSeq(single, 1) != 1 || countSeq(single, 2) != 0 {
			return nil, fmt.Errorf("single template must hold $A once and no $B")
		}
		if len(pair) > 0 && (countSeq(pair, 1) != 1 || countSeq(pair, 2) != 1) {
			return nil, fmt.Errorf("pair template must hold $A and $B once each")
		}
		if len(pair) == 0 {
			pair = append(append([]tmplItem{}, single...), tmplItem{seq: 2, typeID: 1})
		}
		return &template{single: single, pair: pair}, nil
	}
	return nil, fmt.Errorf("type %q is not supported (TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence)", p.Type)
}

func countSeq(items []tmplItem, seq int) int {
	n := 0
	for _, it := range items {
		if it.seq == seq {
			n++
		}
	}
	return n
}

// saveBPE writes the tokenizer.json read (the pipeline is kept as it was), with
// tokenizer_config.json and special_tokens_map.json naming its special tokens.
func (t *Tokenizer) saveBPE(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), t.bpeJSON, 0o644); err != nil {
		return err
	}
	sp := map[string]string{"pad_token": t.inv[t.pad]}
	if t.unk >= 0 {
		sp["unk_token"] = t.inv[t.unk]
	}
	if t.cls >= 0 {
		sp["cls_token"] = t.inv[t.cls]
		sp["bos_token"] = t.inv[t.cls]
	}
	if t.sep >= 0 {
		sp["sep_token"] = t.inv[t.sep]
		sp["eos_token"] = t.inv[t.sep]
	}
	if t.mask >= 0 {
		sp["mask_token"] = t.inv[t.mask]
	}
	cfg := map[string]any{"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 8192}
	for k, v := range sp {
		cfg[k] = v
	}
	added := append([]string(nil), t.specials...)
	sort.Strings(added)
	cfg["additional_special_tokens"] = added
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), b, 0o644); err != nil {
		return err
	}
	b, _ = json.MarshalIndent(sp, "", "  ")
	return os.WriteFile(filepath.Join(dir, "special_tokens_map.json"), b, 0o644)
}
