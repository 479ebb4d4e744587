// Package qwen3 is the Qwen3 decoder (HF model_type "qwen3", Qwen3Model: Qwen3-Embedding-0.6B,
// 4B, 8B) as a GoMLX text encoder, with HuggingFace checkpoint loading and saving: token
// embeddings, then per layer RMSNorm, grouped-query self-attention with per-head RMSNorm of
// the queries and keys before the rotary position embedding (RoPE, rotate_half, rope_theta,
// head_dim from the configuration) under a causal mask combined with the padding mask, a
// residual, RMSNorm, a SwiGLU MLP (down(silu(gate(x)) * up(x))), a residual, and a final
// RMSNorm. Qwen3-Embedding pools the last token (pooling.Last) and L2-normalises
// (sentence-transformers' Normalize module).
//
// Positions are 0, 1, ... over the padded sequence, as transformers numbers them when given
// no position ids, so a left-padded text's tokens sit at shifted positions: RoPE makes
// attention depend on position differences only, so its states are those of the unpadded
// text up to rounding (TestPaddingSides measures it).
//
// The blocks Gemma3 shares (RMSNorm, RoPE, grouped-query attention) are exported: RMSNorm,
// RoPE, Attention. Other packages use the encoder through models/encoder, which registers it
// as model_type "qwen3".
package qwen3

import (
	"encoding/json"
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/toolret/toolret/models/hfweights"
)

// ModelType is the HF model_type.
const ModelType = "qwen3"

// Config mirrors the fields of HF's Qwen3Config (config.json) that define the network.
type Config struct {
	ModelType             string   `json:"model_type,omitempty"`
	Architectures         []string `json:"architectures,omitempty"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	HiddenAct             string   `json:"hidden_act"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	InitializerRange      float64  `json:"initializer_range"`
	RMSNormEps            float64  `json:"rms_norm_eps"`
	AttentionBias         bool     `json:"attention_bias"`
	AttentionDropout      float64  `json:"attention_dropout"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	UseSlidingWindow      bool     `json:"use_sliding_window"`
	// LayerTypes, when present, must all be "full_attention" (Qwen3-Embedding uses no
	// sliding window).
	LayerTypes []string `json:"layer_types,omitempty"`
	// RopeTheta is the RoPE base: transformers 5 writes it in rope_parameters, older
	// checkpoints at the top level (LoadConfig reads both; MarshalJSON writes both).
	RopeTheta      float64         `json:"rope_theta"`
	RopeParameters *RopeParameters `json:"rope_parameters,omitempty"`
	// RopeScaling (older checkpoints) must be absent or null: only the default RoPE is
	// implemented.
	RopeScaling json.RawMessage `json:"rope_scaling,omitempty"`
	PadTokenID  *int            `json:"pad_token_id"`
	BOSTokenID  *int            `json:"bos_token_id,omitempty"`
	EOSTokenID  *int            `json:"eos_token_id,omitempty"`
	// DType is the dtype of the variables and the computation: Float32 (the zero value) or
	// Float64. Checkpoints are F32 on disk whatever the dtype.
	DType dtypes.DType `json:"-"`
}

// RopeParameters is transformers 5's rope_parameters: only rope_type "default" is
// implemented.
type RopeParameters struct {
	RopeTheta float64 `json:"rope_theta"`
	RopeType  string  `json:"rope_type,omitempty"`
}

func (c *Config) dtype() dtypes.DType {
	if c.DType == dtypes.InvalidDType {
		return dtypes.Float32
	}
	return c.DType
}

// Theta is the RoPE base: rope_parameters.rope_theta, else rope_theta.
func (c *Config) Theta() float64 {
	if c.RopeParameters != nil && c.RopeParameters.RopeTheta != 0 {
		return c.RopeParameters.RopeTheta
	}
	return c.RopeTheta
}

// Default returns Qwen3-Embedding-0.6B's configuration.
func Default() *Config {
	return &Config{
		ModelType: ModelType, Architectures: []string{"Qwen3Model"},
		VocabSize: 151669, HiddenSize: 1024, IntermediateSize: 3072, NumHiddenLayers: 28,
		NumAttentionHeads: 16, NumKeyValueHeads: 8, HeadDim: 128, HiddenAct: "silu",
		MaxPositionEmbeddings: 32768, InitializerRange: 0.02, RMSNormEps: 1e-6,
		TieWordEmbeddings: true, RopeTheta: 1e6,
	}
}

// Validate checks the configuration is usable.
func (c *Config) Validate() error {
	if err := c.dims().Validate("qwen3", c.MaxPositionEmbeddings, c.RMSNormEps); err != nil {
		return err
	}
	switch {
	case c.Theta() <= 0:
		return fmt.Errorf("qwen3 config: rope_theta %v must be > 0", c.Theta())
	case c.RopeParameters != nil && c.RopeParameters.RopeType != "" && c.RopeParameters.RopeType != "default":
		return fmt.Errorf("qwen3 config: rope_parameters.rope_type %q not supported (default)", c.RopeParameters.RopeType)
	case len(c.RopeScaling) > 0 && string(c.RopeScaling) != "null":
		return fmt.Errorf("qwen3 config: rope_scaling %s not supported (only the default RoPE)", c.RopeScaling)
	case c.UseSlidingWindow:
		return fmt.Errorf("qwen3 config: use_sliding_window not supported")
	case c.HiddenAct != "silu" && c.HiddenAct != "swish":
		return fmt.Errorf("qwen3 config: hidden_act %q not supported (silu)", c.HiddenAct)
	case c.AttentionDropout < 0 || c.AttentionDropout >= 1:
		return fmt.Errorf("qwen3 config: attention_dropout %v must be in [0, 1)", c.AttentionDropout)
	case c.dtype() != dtypes.Float32 && c.dtype() != dtypes.Float64:
		return fmt.Errorf("qwen3 config: dtype %s not supported (Float32, Float64)", c.dtype())
	}
	if len(c.LayerTypes) != 0 && len(c.LayerTypes) != c.NumHiddenLayers {
		return fmt.Errorf("qwen3 config: %d layer_types for %d layers", len(c.LayerTypes), c.NumHiddenLayers)
	}
	for i, t := range c.LayerTypes {
		if t != "full_attention" {
			return fmt.Errorf("qwen3 config: layer_types[%d] %q not supported (full_attention)", i, t)
		}
	}
	return nil
}

// LoadConfig reads an HF config.json.
func LoadConfig(path string) (*Config, error) {
	c := Default()
	// Fields a checkpoint may omit keep no default that would contradict it.
	c.RopeParameters, c.LayerTypes = nil, nil
	return hfweights.LoadConfig(path, c)
}

// Save writes the configuration as an HF config.json.
func (c *Config) Save(path string) error { return hfweights.SaveJSON(path, c) }

// MarshalJSON writes the config.json fields: rope_theta at the top level and in
// rope_parameters, as both older and current transformers read them.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	p := plain(c)
	p.ModelType = ModelType
	if len(p.Architectures) == 0 {
		p.Architectures = []string{"Qwen3Model"}
	}
	p.RopeTheta = c.Theta()
	p.RopeParameters = &RopeParameters{RopeTheta: c.Theta(), RopeType: "default"}
	return json.Marshal(p)
}
