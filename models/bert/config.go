// Package bert is the BERT encoder as GoMLX graph code, with HuggingFace checkpoint loading and
// saving. Variables live under scope paths that mirror HF parameter names
// ("encoder.layer.0.attention.self.query.weight" is variable "weight" in scope
// "/encoder/layer/0/attention/self/query"), so checkpoints map one to one. Linear weights keep
// HF's [out, in] layout (nn.Dense with DenseLayoutOutputsInput), so nothing is transposed.
//
// Other packages use it through models/encoder, which registers it as model_type "bert".
package bert

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/gomlx/compute/dtypes"
)

// Config mirrors the fields of HF's BertConfig (config.json) that define the network.
type Config struct {
	VocabSize                 int     `json:"vocab_size"`
	HiddenSize                int     `json:"hidden_size"`
	NumHiddenLayers           int     `json:"num_hidden_layers"`
	NumAttentionHeads         int     `json:"num_attention_heads"`
	IntermediateSize          int     `json:"intermediate_size"`
	HiddenAct                 string  `json:"hidden_act"`
	HiddenDropoutProb         float64 `json:"hidden_dropout_prob"`
	AttentionProbsDropoutProb float64 `json:"attention_probs_dropout_prob"`
	MaxPositionEmbeddings     int     `json:"max_position_embeddings"`
	TypeVocabSize             int     `json:"type_vocab_size"`
	InitializerRange          float64 `json:"initializer_range"`
	LayerNormEps              float64 `json:"layer_norm_eps"`
	PadTokenID                int     `json:"pad_token_id"`
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
	switch {
	case c.VocabSize <= 0:
		return fmt.Errorf("bert config: vocab_size %d must be > 0", c.VocabSize)
	case c.HiddenSize <= 0 || c.NumHiddenLayers <= 0 || c.NumAttentionHeads <= 0 || c.IntermediateSize <= 0:
		return fmt.Errorf("bert config: hidden_size %d, num_hidden_layers %d, num_attention_heads %d, intermediate_size %d must all be > 0",
			c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize)
	case c.HiddenSize%c.NumAttentionHeads != 0:
		return fmt.Errorf("bert config: hidden_size %d is not a multiple of num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
	case c.MaxPositionEmbeddings <= 0:
		return fmt.Errorf("bert config: max_position_embeddings %d must be > 0", c.MaxPositionEmbeddings)
	case c.TypeVocabSize <= 0:
		return fmt.Errorf("bert config: type_vocab_size %d must be > 0", c.TypeVocabSize)
	case c.LayerNormEps <= 0:
		return fmt.Errorf("bert config: layer_norm_eps %v must be > 0", c.LayerNormEps)
	case c.HiddenDropoutProb < 0 || c.HiddenDropoutProb >= 1 || c.AttentionProbsDropoutProb < 0 || c.AttentionProbsDropoutProb >= 1:
		return fmt.Errorf("bert config: dropout probabilities must be in [0, 1)")
	}
	if dt := c.dtype(); dt != dtypes.Float32 && dt != dtypes.Float64 {
		return fmt.Errorf("bert config: dtype %s not supported (Float32, Float64)", dt)
	}
	switch c.HiddenAct {
	case "gelu", "gelu_new", "gelu_pytorch_tanh", "relu":
	default:
		return fmt.Errorf("bert config: unsupported hidden_act %q (gelu, gelu_new, relu)", c.HiddenAct)
	}
	return nil
}

// LoadConfig reads an HF config.json.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := Default()
	c.LayerNormEps = 0
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
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
func (c *Config) Save(path string) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
