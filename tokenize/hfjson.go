package tokenize

import (
	"encoding/json"
	"fmt"
	"regexp"

	"golang.org/x/text/unicode/norm"
)

// The parts of a tokenizer.json that the BPE and the Unigram loaders read alike.

// maxPipelineDepth bounds nested Sequence normalizers, pre-tokenizers and post-processors.
const maxPipelineDepth = 8

// decodeStep decodes one normalizer, pre-tokenizer or post-processor, nested depth Sequences
// deep, into v; false when raw is absent or null.
func decodeStep(raw json.RawMessage, depth int, v any) (bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return false, nil
	}
	if depth > maxPipelineDepth {
		return false, fmt.Errorf("Sequence nested deeper than %d", maxPipelineDepth)
	}
	return true, json.Unmarshal(raw, v)
}

// eachInSequence reads the items of a Sequence, one level deeper, with step.
func eachInSequence(items []json.RawMessage, depth int, step func(json.RawMessage, int) error) error {
	for i, r := range items {
		if err := step(r, depth+1); err != nil {
			return fmt.Errorf("Sequence item %d: %w", i, err)
		}
	}
	return nil
}

// normJSON is one normalizer of a tokenizer.json.
type normJSON struct {
	Type        string            `json:"type"`
	Normalizers []json.RawMessage `json:"normalizers"`
	Charsmap    *string           `json:"precompiled_charsmap"`
	StripLeft   *bool             `json:"strip_left"`
	StripRight  *bool             `json:"strip_right"`
	Pattern     struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	} `json:"pattern"`
	Content string `json:"content"`
	Prepend string `json:"prepend"`
}

// normalizers reads a tokenizer.json's normalizer into steps: Sequence, NFC, NFD, NFKC, NFKD,
// Lowercase (which sets lower), Strip and Replace, and through other the types only one model
// reads (it returns false for a type it does not know). An unknown type is refused as not
// supported with model, which names the model and the types it reads.
type normalizers struct {
	steps *[]normStep
	lower *bool
	other func(n *normJSON) (bool, error)
	model string
}

func (p normalizers) parse(raw json.RawMessage, depth int) error {
	var n normJSON
	if ok, err := decodeStep(raw, depth, &n); !ok || err != nil {
		return err
	}
	add := func(s normStep) { *p.steps = append(*p.steps, s) }
	switch n.Type {
	case "Sequence":
		return eachInSequence(n.Normalizers, depth, p.parse)
	case "NFC":
		add(unicodeStep(norm.NFC))
	case "NFD":
		add(unicodeStep(norm.NFD))
	case "NFKC":
		add(unicodeStep(norm.NFKC))
	case "NFKD":
		add(unicodeStep(norm.NFKD))
	case "Lowercase":
		add(lowercaseStep)
		*p.lower = true
	case "Strip":
		add(stripStep(n.StripLeft == nil || *n.StripLeft, n.StripRight == nil || *n.StripRight))
	case "Replace":
		switch pt := n.Pattern; {
		case len(n.Content) > maxReplacement:
			return fmt.Errorf("Replace: content of %d bytes (more than %d)", len(n.Content), maxReplacement)
		case pt.String != nil && *pt.String != "":
			add(replaceStep(nil, *pt.String, n.Content))
		case pt.Regex != nil:
			re, err := regexp.Compile(*pt.Regex)
			if err != nil {
				return fmt.Errorf("Replace: regex %q: %w", *pt.Regex, err)
			}
			add(replaceStep(re, "", n.Content))
		default:
			return fmt.Errorf("Replace: pattern must be a non-empty String or a Regex")
		}
	default:
		if ok, err := p.other(&n); ok || err != nil {
			return err
		}
		return fmt.Errorf("type %q is not supported with %s", n.Type, p.model)
	}
	return nil
}

// hfPadding is a tokenizer.json's padding, as far as toolret reads it.
type hfPadding struct {
	PadID    *int32 `json:"pad_id"`
	PadToken string `json:"pad_token"`
}

// setSpecials lists the added tokens as t's specials and sets t.mask ([MASK] or <mask>) and
// t.pad: padding's pad_id when one of the n ids, else its pad_token, else the first of pads in
// the vocabulary; it reports whether a padding token was found.
func (t *Tokenizer) setSpecials(added []addedToken, p *hfPadding, n int, pads []string) bool {
	for _, a := range added {
		t.specials = appendUnique(t.specials, a.Content)
	}
	for _, name := range []string{MASK, "<mask>"} {
		if id, ok := t.vocab[name]; ok {
			t.mask = id
			break
		}
	}
	if p != nil && p.PadID != nil && *p.PadID >= 0 && int(*p.PadID) < n {
		t.pad = *p.PadID
	} else if p != nil && p.PadToken != "" {
		if id, ok := t.vocab[p.PadToken]; ok {
			t.pad = id
		}
	}
	for _, name := range pads {
		if id, ok := t.vocab[name]; ok && t.pad < 0 {
			t.pad = id
		}
	}
	return t.pad >= 0
}
