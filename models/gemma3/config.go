// Package gemma3 is the Gemma3 text model (HF model_type "gemma3_text", Gemma3TextModel) as a
// GoMLX text encoder, as EmbeddingGemma uses it, with HuggingFace checkpoint loading and
// saving: token embeddings scaled by sqrt(hidden_size) (rounded to the weights' dtype), then
// per layer Gemma RMSNorm (x * (1 + weight)) before and after attention and before and after
// the MLP, grouped-query self-attention with Gemma RMSNorm of the queries and keys before the
// rotary position embedding (rope_theta for full-attention layers, rope_local_base_freq for
// sliding-window ones, layer_types or sliding_window_pattern telling which), scores scaled by
// query_pre_attn_scalar^-1/2 (attn_logit_softcapping is read but, as in transformers' Gemma3,
// not applied), a GELU-tanh gated MLP, and a final RMSNorm.
//
// Attention is causal unless use_bidirectional_attention (EmbeddingGemma): then every layer
// sees the whole text, a sliding layer the tokens within sliding_window / 2 positions either
// side (transformers sets the window to sliding_window // 2 + 1 and attends |i - j| <
// window). Causal sliding layers see the sliding_window - 1 previous tokens and the token
// itself.
//
// EmbeddingGemma's sentence-transformers directory pools the mean, then projects it through
// two Dense modules (768 -> 3072 -> 768, no bias, identity activation) before Normalize: the
// Dense modules are loaded with the model (LoadHF's dense argument), kept as parameters
// "st_dense.<i>.linear.weight", and Pool applies them after any pooling but none.
//
// Other packages use it through models/encoder, which registers it as model_type
// "gemma3_text".
package gemma3

import (
	"encoding/json"
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/toolret/toolret/models/hfweights"
)

// ModelType is the HF model_type.
const ModelType = "gemma3_text"

// Layer types of layer_types.
const (
	FullAttention    = "full_attention"
	SlidingAttention = "sliding_attention"
)

// Config mirrors the fields of HF's Gemma3TextConfig (config.json) that define the network,
// and the sentence-transformers Dense modules that follow the pooling (Dense).
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
	HiddenActivation      string   `json:"hidden_activation"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	InitializerRange      float64  `json:"initializer_range"`
	RMSNormEps            float64  `json:"rms_norm_eps"`
	AttentionBias         bool     `json:"attention_bias"`
	AttentionDropout      float64  `json:"attention_dropout"`
	QueryPreAttnScalar    float64  `json:"query_pre_attn_scalar"`
	// SlidingWindow is config.json's sliding_window (transformers halves it for bidirectional
	// attention when it loads the configuration; this is the value on disk).
	SlidingWindow int `json:"sliding_window"`
	// LayerTypes gives each layer's attention (FullAttention, SlidingAttention); without it
	// every SlidingWindowPattern-th layer is full, the others sliding.
	LayerTypes           []string `json:"layer_types,omitempty"`
	SlidingWindowPattern int      `json:"sliding_window_pattern,omitempty"`
	// RopeTheta and RopeLocalBaseFreq are the RoPE bases of full and sliding layers, at the
	// top level in older checkpoints, in rope_parameters in transformers 5's.
	RopeTheta                 float64                    `json:"rope_theta,omitempty"`
	RopeLocalBaseFreq         float64                    `json:"rope_local_base_freq,omitempty"`
	RopeParameters            map[string]*RopeParameters `json:"rope_parameters,omitempty"`
	RopeScaling               json.RawMessage            `json:"rope_scaling,omitempty"`
	AttnLogitSoftcapping      *float64                   `json:"attn_logit_softcapping"`
	FinalLogitSoftcapping     *float64                   `json:"final_logit_softcapping"`
	UseBidirectionalAttention bool                       `json:"use_bidirectional_attention"`
	PadTokenID                *int                       `json:"pad_token_id"`
	BOSTokenID                *int                       `json:"bos_token_id,omitempty"`
	EOSTokenID                *int                       `json:"eos_token_id,omitempty"`
	TieWordEmbeddings         bool                       `json:"tie_word_embeddings"`
	// Dense are the sentence-transformers Dense modules applied after pooling, in order (not
	// an HF field: set by LoadHF from the directory's modules, kept in toolret's model
	// configurations).
	Dense []Dense `json:"toolret_st_dense,omitempty"`
	// DType is the dtype of the variables and the computation: Float32 (the zero value) or
	// Float64. Checkpoints are F32 on disk whatever the dtype.
	DType dtypes.DType `json:"-"`
}

// RopeParameters is one layer type's entry of transformers 5's rope_parameters: only
// rope_type "default" is implemented.
type RopeParameters struct {
	RopeTheta float64 `json:"rope_theta"`
	RopeType  string  `json:"rope_type,omitempty"`
}

// Dense is a sentence-transformers Dense module: Linear(in, out) with an identity
// activation (the only one implemented), weight "linear.weight" [out, in], bias
// "linear.bias" when Bias.
type Dense struct {
	In   int  `json:"in_features"`
	Out  int  `json:"out_features"`
	Bias bool `json:"bias"`
}

func (c *Config) dtype() dtypes.DType {
	if c.DType == dtypes.InvalidDType {
		return dtypes.Float32
	}
	return c.DType
}

// Default returns EmbeddingGemma-300M's configuration (without its Dense modules).
func Default() *Config {
	return &Config{
		ModelType: ModelType, Architectures: []string{"Gemma3TextModel"},
		VocabSize: 262144, HiddenSize: 768, IntermediateSize: 1152, NumHiddenLayers: 24,
		NumAttentionHeads: 3, NumKeyValueHeads: 1, HeadDim: 256, HiddenActivation: "gelu_pytorch_tanh",
		MaxPositionEmbeddings: 2048, InitializerRange: 0.02, RMSNormEps: 1e-6, QueryPreAttnScalar: 256,
		SlidingWindow: 512, SlidingWindowPattern: 6, RopeTheta: 1e6, RopeLocalBaseFreq: 1e4,
		UseBidirectionalAttention: true, TieWordEmbeddings: true,
	}
}

// ropeTheta returns the RoPE base of a layer type: rope_parameters[type].rope_theta, else
// rope_theta (full) or rope_local_base_freq (sliding).
func (c *Config) ropeTheta(layerType string) float64 {
	if p := c.RopeParameters[layerType]; p != nil && p.RopeTheta != 0 {
		return p.RopeTheta
	}
	if layerType == SlidingAttention {
		return c.RopeLocalBaseFreq
	}
	return c.RopeTheta
}

// LayerType returns the attention type of layer l (0 <= l < num_hidden_layers).
func (c *Config) LayerType(l int) string {
	if len(c.LayerTypes) > 0 {
		return c.LayerTypes[l]
	}
	p := c.SlidingWindowPattern
	if p <= 0 {
		p = 6
	}
	if (l+1)%p != 0 {
		return SlidingAttention
	}
	return FullAttention
}

// Window is the attention window of a sliding layer as Allowed takes it: |i - j| <
// sliding_window / 2 + 1 with bidirectional attention, i - j < sliding_window causally.
func (c *Config) Window() int {
	if c.UseBidirectionalAttention {
		return c.SlidingWindow/2 + 1
	}
	return c.SlidingWindow
}

// Validate checks the configuration is usable.
func (c *Config) Validate() error {
	if err := c.dims().Validate("gemma3", c.MaxPositionEmbeddings, c.RMSNormEps); err != nil {
		return err
	}
	switch {
	case c.QueryPreAttnScalar <= 0:
		return fmt.Errorf("gemma3 config: query_pre_attn_scalar %v must be > 0", c.QueryPreAttnScalar)
	case len(c.RopeScaling) > 0 && string(c.RopeScaling) != "null":
		return fmt.Errorf("gemma3 config: rope_scaling %s not supported (only the default RoPE)", c.RopeScaling)
	case c.HiddenActivation != "gelu_pytorch_tanh" && c.HiddenActivation != "gelu_new":
		return fmt.Errorf("gemma3 config: hidden_activation %q not supported (gelu_pytorch_tanh)", c.HiddenActivation)
	case c.AttentionDropout < 0 || c.AttentionDropout >= 1:
		return fmt.Errorf("gemma3 config: attention_dropout %v must be in [0, 1)", c.AttentionDropout)
	case c.dtype() != dtypes.Float32 && c.dtype() != dtypes.Float64:
		return fmt.Errorf("gemma3 config: dtype %s not supported (Float32, Float64)", c.dtype())
	}
	if len(c.LayerTypes) != 0 && len(c.LayerTypes) != c.NumHiddenLayers {
		return fmt.Errorf("gemma3 config: %d layer_types for %d layers", len(c.LayerTypes), c.NumHiddenLayers)
	}
	for l := 0; l < c.NumHiddenLayers; l++ {
		t := c.LayerType(l)
		if t != FullAttention && t != SlidingAttention {
			return fmt.Errorf("gemma3 config: layer_types[%d] %q not supported (full_attention, sliding_attention)", l, t)
		}
		if t == SlidingAttention && c.SlidingWindow <= 0 {
			return fmt.Errorf("gemma3 config: layer %d is a sliding-window layer but sliding_window is %d", l, c.SlidingWindow)
		}
		if th := c.ropeTheta(t); th <= 0 {
			return fmt.Errorf("gemma3 config: RoPE base %v of %s layers must be > 0 (rope_theta, rope_local_base_freq, rope_parameters)", th, t)
		}
		if p := c.RopeParameters[t]; p != nil && p.RopeType != "" && p.RopeType != "default" {
			return fmt.Errorf("gemma3 config: rope_parameters.%s.rope_type %q not supported (default)", t, p.RopeType)
		}
	}
	in := c.HiddenSize
	for i, d := range c.Dense {
		if d.In != in || d.Out <= 0 {
			return fmt.Errorf("gemma3 config: Dense module %d maps %d to %d features, after a width of %d", i, d.In, d.Out, in)
		}
		in = d.Out
	}
	if in != c.HiddenSize {
		return fmt.Errorf("gemma3 config: the Dense modules end at %d features, not hidden_size %d (toolret's pooled width)", in, c.HiddenSize)
	}
	return nil
}

// LoadConfig reads an HF config.json.
func LoadConfig(path string) (*Config, error) {
	c := Default()
	// Fields a checkpoint may omit take transformers' defaults, not EmbeddingGemma's.
	c.UseBidirectionalAttention, c.LayerTypes, c.RopeParameters = false, nil, nil
	return hfweights.LoadConfig(path, c)
}

// MarshalJSON writes the config.json fields, the RoPE bases both at the top level and in
// rope_parameters, as older and current transformers read them.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	p := plain(c)
	p.ModelType = ModelType
	if len(p.Architectures) == 0 {
		p.Architectures = []string{"Gemma3TextModel"}
	}
	p.RopeTheta, p.RopeLocalBaseFreq = c.ropeTheta(FullAttention), c.ropeTheta(SlidingAttention)
	p.RopeParameters = map[string]*RopeParameters{
		FullAttention:    {RopeTheta: p.RopeTheta, RopeType: "default"},
		SlidingAttention: {RopeTheta: p.RopeLocalBaseFreq, RopeType: "default"},
	}
	if len(p.LayerTypes) == 0 {
		for l := 0; l < c.NumHiddenLayers; l++ {
			p.LayerTypes = append(p.LayerTypes, c.LayerType(l))
		}
	}
	return json.Marshal(p)
}
