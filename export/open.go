package export

import (
	"context"
	"fmt"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/models/encoder"
)

// Open loads the model a reference names, as every command's -model takes it: a trained run
// or one of its checkpoints (LoadModel), a HuggingFace or sentence-transformers directory
// (LoadHF: pre-trained weights, used as they are), or a hub id "org/name[@revision]"
// resolved in the Hugging Face hub cache and downloaded into it when missing (hub.Resolve).
func Open(ctx context.Context, ref string, be compute.Backend) (*Model, error) {
	dir, err := hub.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if IsHFDir(dir) {
		return LoadHF(dir, be)
	}
	return LoadModel(dir, be)
}

// IsHFDir reports whether dir is a HuggingFace model directory (config.json at its top)
// rather than a toolret run or checkpoint (encoder.IsHFDir).
func IsHFDir(dir string) bool { return encoder.IsHFDir(dir) }

// Prompts overrides a model's query and tool prompts (nil: keep the model's own, from its
// config_sentence_transformers.json).
type Prompts struct {
	Query, Tool *string
}

// Apply sets the given prompts on a bi-encoder.
func (p Prompts) Apply(m *Model) error {
	if p.Query == nil && p.Tool == nil {
		return nil
	}
	if m.Kind != KindBiEncoder {
		return fmt.Errorf("prompts apply to a bi-encoder, not a %s", m.Kind)
	}
	if m.Marker != "" {
		return fmt.Errorf("%s is an iteration-aware bi-encoder: its queries carry its marker, not a prompt", m.Source)
	}
	if m.EmbedFn != nil { // a trained run embeds with the prompts it was trained with
		if (p.Query != nil && *p.Query != m.QueryPrompt) || (p.Tool != nil && *p.Tool != m.ToolPrompt) {
			return fmt.Errorf("%s is a trained run: it embeds with the prompts it was trained with (query %q, tool %q); train it with -query-prompt/-tool-prompt, or export it with -format hf and set prompts on that", m.Source, m.QueryPrompt, m.ToolPrompt)
		}
		return nil
	}
	if p.Query != nil {
		m.QueryPrompt = *p.Query
	}
	if p.Tool != nil {
		m.ToolPrompt = *p.Tool
	}
	return nil
}

// STPooling reads the pooling of a sentence-transformers directory (encoder.STPooling): ok is
// false when dir has no modules.json or no Pooling module.
func STPooling(dir string) (p encoder.Pooling, ok bool, err error) { return encoder.STPooling(dir) }

// Lengths override a bi-encoder's maximum tokens per query and per tool text ([CLS] and
// [SEP] included); 0 keeps the model's own (a pre-trained model's max_seq_length, a trained
// run's training lengths).
type Lengths struct{ Query, Tool int }

// Apply sets the lengths on m, a bi-encoder loaded from a pre-trained directory or a trained
// run (which then embeds with them instead of its training lengths). A length above the
// encoder's position table is an error.
func (l Lengths) Apply(m *Model) error {
	if l.Query == 0 && l.Tool == 0 {
		return nil
	}
	switch {
	case m.Kind != KindBiEncoder:
		return fmt.Errorf("lengths apply to a bi-encoder, not a %s", m.Kind)
	case m.EmbedFn != nil && m.setLengths == nil:
		return fmt.Errorf("%s embeds with its own lengths (export it with -format hf, then set lengths on that)", m.Source)
	case l.Query < 0 || l.Tool < 0 || l.Query == 1 || l.Tool == 1:
		return fmt.Errorf("lengths query %d, tool %d: each must be 0 (the model's) or >= 2", l.Query, l.Tool)
	}
	for i := range m.Towers {
		t := &m.Towers[i]
		limit := t.Encoder.MaxPositions()
		for _, n := range []int{l.Query, l.Tool} {
			if n > limit {
				return fmt.Errorf("length %d: model %s has %d positions", n, m.Source, limit)
			}
		}
	}
	if m.setLengths != nil {
		if err := m.setLengths(l.Query, l.Tool); err != nil {
			return err
		}
	}
	if l.Query > 0 {
		m.QueryMaxLen = l.Query
	}
	if l.Tool > 0 {
		m.ToolMaxLen = l.Tool
	}
	for i := range m.Towers { // a tower's limit covers both sides; Embed takes the side's
		t := &m.Towers[i]
		t.MaxLen = min(max(t.MaxLen, m.QueryMaxLen, m.ToolMaxLen), t.Encoder.MaxPositions())
	}
	return nil
}
