// Package bert is the BERT encoder as GoMLX graph code, with HuggingFace checkpoint loading and
// saving. Variables live under scope paths that mirror HF parameter names
// ("encoder.layer.0.attention.self.query.weight" is variable "weight" in scope
// "/encoder/layer/0/attention/self/query"), so checkpoints map one to one. Linear weights keep
// HF's [out, in] layout (nn.Dense with DenseLayoutOutputsInput), so nothing is transposed.
//
// Other packages use it through models/encoder, which registers it as model_type "bert".
package bert

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/toolret/toolret/internal/jsonfile"
	"github.com/toolret/toolret/models/hfweights"
)

// Config mirrors the fields of HF's BertConfig (config.json) that define the network.
type Config struct {
	// The config.json fields BERT shares with DeBERTa (vocab_size to pad_token_id).
	hfweights.Config
	// ModelType and Architectures are kept for export ("bert", ["BertModel"]).
	ModelType     string   `json:"model_type,omitempty"`
	Architectures []string `json:"architectures,omitempty"`
	// Pooler reports whether the checkpoint has (and the model uses) the pooler layer.
	// Not an HF field: set from the weights found, default true.
	Pooler *bool `json:"-"`
	// DType is the dtype of the variables and the computation: Float32 (the zero value means
	// Float32) or Float64 (used by the gradient check). Checkpoints are always F32 on disk.
	DType dtypes.DType `json:"-"`
}

func (c *Config) dtype() dtypes.DType {
	if c.DType == dtypes.InvalidDType {
		return dtypes.Float32
	}
	return c.DType
}

// Default returns bert-base-uncased's configuration with the given size overrides applied
// by the caller.
func Default() *Config {
	return &Config{
		VocabSize: 30522, HiddenSize: 768, NumHiddenLayers: 12, NumAttentionHeads: 12,
		IntermediateSize: 3072, HiddenAct: "gelu", HiddenDropoutProb: 0.1,
		AttentionProbsDropoutProb: 0.1, MaxPositionEmbeddings: 512, TypeVocabSize: 2,
		InitializerRange: 0.02, LayerNormEps: 1e-12, ModelType: "bert",
		Architectures: []string{"BertModel"},
	}
}

// HasPooler reports whether the pooler layer is part of the model.
func (c *Config) HasPooler() bool { return c.Pooler == nil || *c.Pooler }

// Validate checks the configuration is usable.
func (c *Config) Validate() error {
	if err := c.CheckSizes("bert config"); err != nil {
		return err
	}
	switch {
	case c.MaxPositionEmbeddings <= 0:
		return fmt.Errorf("bert config: max_position_embeddings %d must be > 0", c.MaxPositionEmbeddings)
	case c.TypeVocabSize <= 0:
		return fmt.Errorf("bert config: type_vocab_size %d must be > 0", c.TypeVocabSize)
	}
	return c.CheckLayers("bert config", c.dtype())
}

// LoadConfig reads an HF config.json.
func LoadConfig(path string) (*Config, error) {
	c := Default()
	c.LayerNormEps = 0
	if err := jsonfile.Read(path, c); err != nil {
		return nil, err
	}
	if c.LayerNormEps == 0 {
		c.LayerNormEps = 1e-12
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Save writes the configuration as an HF config.json.
func (c *Config) Save(path string) error { return hfweights.SaveJSON(path, c) }
