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
