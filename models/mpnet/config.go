// Package mpnet is the MPNet encoder (HF model_type "mpnet", e.g. all-mpnet-base-v2) as GoMLX
// graph code, with HuggingFace checkpoint loading and saving. MPNet is BERT's layer stack with
// three differences, all reproduced here: no token types; absolute positions start after the
// padding id (RoBERTa's numbering, so a model of max_position_embeddings 514 takes 512 tokens);
// and every layer adds one shared relative-position bias to its attention scores, T5-style
// bidirectional log buckets (relative_attention_num_buckets, distances up to 128). Variables
// live under scope paths that mirror HF parameter names ("encoder.layer.0.attention.attn.q.
// weight" is variable "weight" in scope "/encoder/layer/0/attention/attn/q").
//
// Other packages use it through models/encoder, which registers it as model_type "mpnet".
package mpnet

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/toolret/toolret/models/hfweights"
)

// ModelType is the HF model_type.
const ModelType = "mpnet"

// Prefix is HF's base_model_prefix: task models name the encoder's tensors "mpnet.<name>".
const Prefix = "mpnet"

// maxDistance is the distance from which MPNet's relative buckets saturate (HF's
// relative_position_bucket default, not a config field).
const maxDistance = 128

// Config mirrors the fields of HF's MPNetConfig (config.json) that define the network.
type Config struct {
	hfweights.Config
	// RelativeBuckets is relative_attention_num_buckets (32 in every released MPNet).
	RelativeBuckets int `json:"relative_attention_num_buckets"`
	// ModelType and Architectures are kept for export ("mpnet", ["MPNetModel"]).
	ModelType     string   `json:"model_type,omitempty"`
	Architectures []string `json:"architectures,omitempty"`
	// Pooler reports whether the checkpoint has (and the model uses) the pooler layer
	// (dense + tanh over the first token, as BERT's). Set from the weights found.
	Pooler *bool `json:"-"`
	// DType is the dtype of the variables and the computation: Float32 (the zero value) or
	// Float64. Checkpoints are always F32 on disk.
	DType dtypes.DType `json:"-"`
}

func (c *Config) dtype() dtypes.DType {
	if c.DType == dtypes.InvalidDType {
		return dtypes.Float32
	}
	return c.DType
}

// Default returns microsoft/mpnet-base's configuration (the base of all-mpnet-base-v2).
func Default() *Config {
	return &Config{
		Config: hfweights.Config{
			VocabSize: 30527, HiddenSize: 768, NumHiddenLayers: 12, NumAttentionHeads: 12,
			IntermediateSize: 3072, HiddenAct: "gelu", HiddenDropoutProb: 0.1,
			AttentionProbsDropoutProb: 0.1, MaxPositionEmbeddings: 514, InitializerRange: 0.02,
			LayerNormEps: 1e-5, PadTokenID: 1,
		},
		RelativeBuckets: 32, ModelType: ModelType, Architectures: []string{"MPNetModel"},
	}
}

// HasPooler reports whether the pooler layer is part of the model.
func (c *Config) HasPooler() bool { return c.Pooler == nil || *c.Pooler }

// MaxTokens is the longest sequence the absolute positions cover: positions are numbered
// from pad_token_id + 1.
func (c *Config) MaxTokens() int { return c.MaxPositionEmbeddings - c.PadTokenID - 1 }

// Validate checks the configuration is usable.
func (c *Config) Validate() error {
	if err := c.CheckSizes("mpnet config"); err != nil {
		return err
	}
	switch {
	case c.PadTokenID < 0 || c.PadTokenID >= c.VocabSize:
		return fmt.Errorf("mpnet config: pad_token_id %d outside the vocabulary [0, %d)", c.PadTokenID, c.VocabSize)
	case c.MaxTokens() <= 0:
		return fmt.Errorf("mpnet config: max_position_embeddings %d leaves no position after pad_token_id %d", c.MaxPositionEmbeddings, c.PadTokenID)
	case c.RelativeBuckets < 2 || c.RelativeBuckets%2 != 0:
		return fmt.Errorf("mpnet config: relative_attention_num_buckets %d must be even and >= 2", c.RelativeBuckets)
	}
	return c.CheckLayers("mpnet config", c.dtype())
}

// LoadConfig reads an HF config.json.
func LoadConfig(path string) (*Config, error) {
	return hfweights.LoadConfig(path, Default())
}

// Save writes the configuration as an HF config.json.
func (c *Config) Save(path string) error { return hfweights.SaveJSON(path, c) }
