// Package modernbert is the ModernBERT encoder (HF model_type "modernbert":
// answerdotai/ModernBERT-*, nomic-ai/modernbert-embed-base, Alibaba-NLP/gte-modernbert-base) as
// GoMLX graph code, with HuggingFace checkpoint loading and saving. A ModernBERT layer is
// pre-norm: x + Wo(attention(attn_norm(x))) then x + Wo(GeGLU(Wi(mlp_norm(x)))), the first
// layer's attn_norm being the identity; attention uses rotary positions (HF's rotate_half
// convention) and is global (every position) on every global_attn_every_n_layers-th layer
// (layer index % n == 0) and local on the others: a token attends to the tokens within
// local_attention/2 positions on each side. Global and local layers have their own RoPE base
// (global_rope_theta, local_rope_theta). LayerNorms have no bias unless norm_bias, Linear
// layers none unless attention_bias / mlp_bias. There is no absolute position table:
// max_position_embeddings only bounds the sequence length. Parameter names are HF's
// ("layers.0.attn.Wqkv.weight"); task models prefix them with "model.".
//
// Other packages use it through models/encoder, which registers it as model_type
// "modernbert". Its tokenizer is the byte-level BPE one of its tokenizer.json (package
// tokenize: [CLS] A [SEP]).
package modernbert

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/toolret/toolret/models/hfweights"
)

// ModelType is the HF model_type.
const ModelType = "modernbert"

// Prefix is HF's base_model_prefix: task models name the encoder's tensors "model.<name>".
const Prefix = "model"

// Layer types, as transformers 5's layer_types names them.
const (
	FullAttention    = "full_attention"
	SlidingAttention = "sliding_attention"
)

// Config mirrors the fields of HF's ModernBertConfig (config.json) that define the network.
// Checkpoints written before transformers 5 give the layer pattern and RoPE bases as
// global_attn_every_n_layers, global_rope_theta and local_rope_theta; later ones also write
// layer_types and rope_parameters, which take precedence when present.
type Config struct {
	ModelType               string   `json:"model_type,omitempty"`
	Architectures           []string `json:"architectures,omitempty"`
	VocabSize               int      `json:"vocab_size"`
	HiddenSize              int      `json:"hidden_size"`
	IntermediateSize        int      `json:"intermediate_size"`
	NumHiddenLayers         int      `json:"num_hidden_layers"`
	NumAttentionHeads       int      `json:"num_attention_heads"`
	HiddenActivation        string   `json:"hidden_activation"`
	MaxPositionEmbeddings   int      `json:"max_position_embeddings"`
	InitializerRange        float64  `json:"initializer_range"`
	InitializerCutoffFactor float64  `json:"initializer_cutoff_factor"`
	NormEps                 float64  `json:"norm_eps"`
	NormBias                bool     `json:"norm_bias"`
	PadTokenID              int      `json:"pad_token_id"`
	EOSTokenID              int      `json:"eos_token_id"`
	BOSTokenID              int      `json:"bos_token_id"`
	CLSTokenID              int      `json:"cls_token_id"`
	SEPTokenID              int      `json:"sep_token_id"`
	GlobalRopeTheta         float64  `json:"global_rope_theta"`
	LocalRopeTheta          float64  `json:"local_rope_theta"`
	GlobalAttnEveryNLayers  int      `json:"global_attn_every_n_layers"`
	LocalAttention          int      `json:"local_attention"`
	AttentionBias           bool     `json:"attention_bias"`
	AttentionDropout        float64  `json:"attention_dropout"`
	EmbeddingDropout        float64  `json:"embedding_dropout"`
	MLPBias                 bool     `json:"mlp_bias"`
	MLPDropout              float64  `json:"mlp_dropout"`
	ClassifierPooling       string   `json:"classifier_pooling,omitempty"`
	// LayerTypes and RopeParameters are transformers 5's form of the layer pattern and RoPE
	// bases (see Config).
	LayerTypes     []string                 `json:"layer_types,omitempty"`
	RopeParameters map[string]RopeParameter `json:"rope_parameters,omitempty"`
	// Pooler is whether a pooler layer was asked for (WithPooler): ModernBERT has none, so
	// Validate refuses true. Not an HF field.
	Pooler bool `json:"-"`
	// DType is the dtype of the variables and the computation: Float32 (the zero value) or
	// Float64. Checkpoints are always F32 on disk.
	DType dtypes.DType `json:"-"`
}

// RopeParameter is one entry of rope_parameters.
type RopeParameter struct {
	RopeType  string  `json:"rope_type,omitempty"`
	RopeTheta float64 `json:"rope_theta,omitempty"`
}

func (c *Config) dtype() dtypes.DType {
	if c.DType == dtypes.InvalidDType {
		return dtypes.Float32
	}
	return c.DType
}

// Default returns answerdotai/ModernBERT-base's configuration.
func Default() *Config {
	return &Config{
		ModelType: ModelType, Architectures: []string{"ModernBertModel"},
		VocabSize: 50368, HiddenSize: 768, IntermediateSize: 1152, NumHiddenLayers: 22, NumAttentionHeads: 12,
		HiddenActivation: "gelu", MaxPositionEmbeddings: 8192, InitializerRange: 0.02, InitializerCutoffFactor: 2,
		NormEps: 1e-5, PadTokenID: 50283, EOSTokenID: 50282, BOSTokenID: 50281, CLSTokenID: 50281, SEPTokenID: 50282,
		GlobalRopeTheta: 160000, LocalRopeTheta: 10000, GlobalAttnEveryNLayers: 3, LocalAttention: 128,
		ClassifierPooling: "mean",
	}
}

// IsGlobal reports whether layer l attends globally: layer_types when given, else every
// global_attn_every_n_layers-th layer from layer 0.
func (c *Config) IsGlobal(l int) bool {
	if len(c.LayerTypes) > 0 {
		return c.LayerTypes[l] == FullAttention
	}
	return l%c.GlobalAttnEveryNLayers == 0
}

// RopeTheta is the RoPE base of a global or a local layer: rope_parameters' when given, else
// global_rope_theta or local_rope_theta.
func (c *Config) RopeTheta(global bool) float64 {
	key, theta := SlidingAttention, c.LocalRopeTheta
	if global {
		key, theta = FullAttention, c.GlobalRopeTheta
	}
	if p, ok := c.RopeParameters[key]; ok && p.RopeTheta > 0 {
		return p.RopeTheta
	}
	return theta
}

// Window is how many positions a local layer's token sees on each side (local_attention/2).
func (c *Config) Window() int { return c.LocalAttention / 2 }

// Validate checks the configuration is usable.
func (c *Config) Validate() error {
	const what = "modernbert config"
	switch {
	case c.VocabSize <= 0:
		return fmt.Errorf("%s: vocab_size %d must be > 0", what, c.VocabSize)
	case c.HiddenSize <= 0 || c.NumHiddenLayers <= 0 || c.NumAttentionHeads <= 0 || c.IntermediateSize <= 0:
		return fmt.Errorf("%s: hidden_size %d, num_hidden_layers %d, num_attention_heads %d, intermediate_size %d must all be > 0",
			what, c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize)
	case c.HiddenSize%c.NumAttentionHeads != 0:
		return fmt.Errorf("%s: hidden_size %d is not a multiple of num_attention_heads %d", what, c.HiddenSize, c.NumAttentionHeads)
	case (c.HiddenSize/c.NumAttentionHeads)%2 != 0:
		return fmt.Errorf("%s: head size %d must be even for rotary positions", what, c.HiddenSize/c.NumAttentionHeads)
	case c.MaxPositionEmbeddings <= 0:
		return fmt.Errorf("%s: max_position_embeddings %d must be > 0", what, c.MaxPositionEmbeddings)
	case c.NormEps <= 0:
		return fmt.Errorf("%s: norm_eps %v must be > 0", what, c.NormEps)
	case len(c.LayerTypes) == 0 && c.GlobalAttnEveryNLayers <= 0:
		return fmt.Errorf("%s: global_attn_every_n_layers %d must be > 0", what, c.GlobalAttnEveryNLayers)
	case len(c.LayerTypes) != 0 && len(c.LayerTypes) != c.NumHiddenLayers:
		return fmt.Errorf("%s: layer_types has %d entries for %d layers", what, len(c.LayerTypes), c.NumHiddenLayers)
	case c.LocalAttention < 0:
		return fmt.Errorf("%s: local_attention %d must be >= 0", what, c.LocalAttention)
	case c.RopeTheta(true) <= 0 || c.RopeTheta(false) <= 0:
		return fmt.Errorf("%s: rope thetas %v (global) and %v (local) must be > 0", what, c.RopeTheta(true), c.RopeTheta(false))
	case c.PadTokenID < 0 || c.PadTokenID >= c.VocabSize:
		return fmt.Errorf("%s: pad_token_id %d outside the vocabulary [0, %d)", what, c.PadTokenID, c.VocabSize)
	case c.AttentionDropout < 0 || c.AttentionDropout >= 1 || c.EmbeddingDropout < 0 || c.EmbeddingDropout >= 1 ||
		c.MLPDropout < 0 || c.MLPDropout >= 1:
		return fmt.Errorf("%s: dropout probabilities must be in [0, 1)", what)
	case c.Pooler:
		return fmt.Errorf("%s: ModernBERT has no pooler layer: pool with cls or mean (-pooling cls)", what)
	case c.dtype() != dtypes.Float32 && c.dtype() != dtypes.Float64:
		return fmt.Errorf("%s: dtype %s not supported (Float32, Float64)", what, c.dtype())
	}
	for i, t := range c.LayerTypes {
		if t != FullAttention && t != SlidingAttention {
			return fmt.Errorf("%s: layer_types[%d] %q (%s or %s)", what, i, t, FullAttention, SlidingAttention)
		}
	}
	for k, p := range c.RopeParameters {
		if p.RopeType != "" && p.RopeType != "default" {
			return fmt.Errorf("%s: rope_parameters[%s] rope_type %q not supported (default)", what, k, p.RopeType)
		}
	}
	switch c.HiddenActivation {
	case "gelu", "gelu_new", "gelu_pytorch_tanh", "relu":
		return nil
	}
	return fmt.Errorf("%s: unsupported hidden_activation %q (gelu, gelu_new, gelu_pytorch_tanh, relu)", what, c.HiddenActivation)
}

// UnmarshalJSON reads config.json over c's current values; rope_scaling (RoPE variants) is
// refused rather than ignored.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	var extra struct {
		RopeScaling json.RawMessage `json:"rope_scaling"`
	}
	if err := json.Unmarshal(b, &extra); err != nil {
		return err
	}
	if s := string(extra.RopeScaling); s != "" && s != "null" {
		return fmt.Errorf("rope_scaling %s is not supported", s)
	}
	return json.Unmarshal(b, (*plain)(c))
}

// floatFields are the config.json fields transformers' ModernBertConfig types as float: they
// are written with a decimal point (2.0, not 2), which its strict dataclass requires.
var floatFields = []string{"initializer_range", "initializer_cutoff_factor", "norm_eps", "global_rope_theta",
	"local_rope_theta", "attention_dropout", "embedding_dropout", "mlp_dropout"}

// MarshalJSON writes the config.json fields, floats as floats (floatFields).
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	b, err := json.Marshal(plain(c))
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	asFloat := func(r json.RawMessage) json.RawMessage {
		if s := string(r); !strings.ContainsAny(s, ".eE") && s != "null" {
			return json.RawMessage(s + ".0")
		}
		return r
	}
	for _, k := range floatFields {
		if r, ok := m[k]; ok {
			m[k] = asFloat(r)
		}
	}
	if r, ok := m["rope_parameters"]; ok {
		var rp map[string]map[string]json.RawMessage
		if err := json.Unmarshal(r, &rp); err != nil {
			return nil, err
		}
		for _, p := range rp {
			if t, ok := p["rope_theta"]; ok {
				p["rope_theta"] = asFloat(t)
			}
		}
		if m["rope_parameters"], err = json.Marshal(rp); err != nil {
			return nil, err
		}
	}
	return json.Marshal(m)
}

// LoadConfig reads an HF config.json.
func LoadConfig(path string) (*Config, error) {
	return hfweights.LoadConfig(path, Default())
}

// Save writes the configuration as an HF config.json.
func (c *Config) Save(path string) error { return hfweights.SaveJSON(path, c) }
