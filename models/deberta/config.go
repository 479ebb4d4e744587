// Package deberta is the DeBERTa-v2/v3 encoder (HF model_type "deberta-v2") as GoMLX graph
// code, with HuggingFace checkpoint loading and saving. It computes what HF transformers 4.x
// DebertaV2Model computes:
//
//   - embeddings: word embeddings (+ absolute positions when position_biased_input, + token
//     types when type_vocab_size > 0), projected by embed_proj (no bias) when embedding_size
//     differs from hidden_size, LayerNorm, then multiplied by the attention mask;
//   - disentangled attention: relative-position embeddings rel_embeddings [2·span, hidden]
//     (LayerNorm'd once per forward with norm_rel_ebd "layer_norm" and shared by all layers),
//     log-bucketed relative positions (position_buckets, max_relative_positions), content-to-
//     position (c2p) and position-to-content (p2c) terms (pos_att_type) projected with the
//     layer's query/key projections (share_att_key) or with pos_query_proj/pos_key_proj, all
//     scaled by sqrt(head size · (1 + |pos_att_type|)); HF's XSoftmax masking (a pair (i, j)
//     takes part only when both tokens are real; a padding query row gets zero weights);
//   - post-LN layers with the exact erf GELU, dropout only in training graphs;
//   - the ContextPooler of DebertaV2ForSequenceClassification (pooler.dense.*): dropout
//     (pooler_dropout), dense, pooler_hidden_act (GELU) over the [CLS] state. It is the
//     encoder's pooler layer: PoolPooler applies it, and HasPooler reports whether the
//     checkpoint has it.
//
// Variables live under scope paths that mirror HF parameter names without the "deberta."
// prefix ("encoder.layer.0.attention.self.query_proj.weight" is variable "weight" in scope
// "/encoder/layer/0/attention/self/query_proj"); Linear weights keep HF's [out, in] layout.
// Other packages use it through models/encoder, which registers it as model_type
// "deberta-v2".
package deberta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/toolret/toolret/internal/jsonfile"
	"github.com/toolret/toolret/models/hfweights"
)

// ModelType is HF's model_type of DeBERTa-v2 and v3.
const ModelType = "deberta-v2"

// AttTypes is pos_att_type: a list of "c2p" and "p2c". It reads HF's older string form
// ("p2c|c2p") too and is written as a list.
type AttTypes []string

// UnmarshalJSON accepts a list, a "|"-separated string or null.
func (a *AttTypes) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*a = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*a = nil
		for _, p := range strings.Split(strings.ToLower(s), "|") {
			if p = strings.TrimSpace(p); p != "" {
				*a = append(*a, p)
			}
		}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("pos_att_type: want a list or a \"|\"-separated string: %w", err)
	}
	*a = l
	return nil
}

// Config mirrors the fields of HF's DebertaV2Config (config.json) that define the network.
// Fields absent from a config.json take HF's defaults (see UnmarshalJSON).
type Config struct {
	// The config.json fields DeBERTa shares with BERT (vocab_size to pad_token_id).
	hfweights.Config
	// EmbeddingSize is the width of the embedding tables; 0 means HiddenSize. When it
	// differs from HiddenSize, embeddings.embed_proj (no bias) projects to HiddenSize.
	EmbeddingSize       int  `json:"embedding_size,omitempty"`
	PositionBiasedInput bool `json:"position_biased_input"`
	RelativeAttention   bool `json:"relative_attention"`
	// MaxRelativePositions < 1 means MaxPositionEmbeddings.
	MaxRelativePositions int `json:"max_relative_positions"`
	// PositionBuckets > 0 log-buckets relative positions into that many buckets per side.
	PositionBuckets int      `json:"position_buckets"`
	PosAttType      AttTypes `json:"pos_att_type"`
	ShareAttKey     bool     `json:"share_att_key"`
	// NormRelEbd is "none" or "layer_norm" (HF allows a "|"-separated list of both).
	NormRelEbd string `json:"norm_rel_ebd"`
	// PoolerHiddenSize must equal HiddenSize (0 means HiddenSize).
	PoolerHiddenSize int     `json:"pooler_hidden_size,omitempty"`
	PoolerDropout    float64 `json:"pooler_dropout"`
	PoolerHiddenAct  string  `json:"pooler_hidden_act"`
	// ConvKernelSize > 0 (deberta-v2-xlarge's ConvLayer) and an AttentionHeadSize other
	// than HiddenSize / NumAttentionHeads are not supported: Validate rejects them.
	ConvKernelSize    int `json:"conv_kernel_size,omitempty"`
	AttentionHeadSize int `json:"attention_head_size,omitempty"`

	// ModelType and Architectures are kept for export ("deberta-v2", ["DebertaV2Model"]).
	ModelType     string   `json:"model_type,omitempty"`
	Architectures []string `json:"architectures,omitempty"`
	// Pooler reports whether the checkpoint has (and the model uses) the ContextPooler.
	// Not an HF field: set from the weights found, default true.
	Pooler *bool `json:"-"`
	// DType is the dtype of the variables and the computation: Float32 (the zero value) or
	// Float64 (gradient checks). Checkpoints are always F32 on disk.
	DType dtypes.DType `json:"-"`
}

// hfDefaults are DebertaV2Config's defaults (and the getattr defaults of the modelling
// code): what a config.json field that is absent means.
func hfDefaults() Config {
	return Config{
		VocabSize: 128100, HiddenSize: 1536, NumHiddenLayers: 24, NumAttentionHeads: 24,
		IntermediateSize: 6144, HiddenAct: "gelu", HiddenDropoutProb: 0.1,
		AttentionProbsDropoutProb: 0.1, MaxPositionEmbeddings: 512, TypeVocabSize: 0,
		InitializerRange: 0.02, LayerNormEps: 1e-7, RelativeAttention: false,
		MaxRelativePositions: -1, PadTokenID: 0, PositionBiasedInput: true,
		PositionBuckets: -1, NormRelEbd: "none", PoolerDropout: 0, PoolerHiddenAct: "gelu",
	}
}

// Default returns a deberta-v3-base-like configuration: relative attention with 256
// position buckets over 512 positions, pos_att_type [p2c, c2p], share_att_key, rel
// embeddings LayerNorm, no absolute positions, no token types, layer_norm_eps 1e-7, GELU.
func Default() *Config {
	c := hfDefaults()
	c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize = 768, 12, 12, 3072
	c.RelativeAttention, c.PositionBuckets, c.ShareAttKey = true, 256, true
	c.PosAttType = AttTypes{"p2c", "c2p"}
	c.NormRelEbd = "layer_norm"
	c.PositionBiasedInput = false
	c.ModelType, c.Architectures = ModelType, []string{"DebertaV2Model"}
	return &c
}

// UnmarshalJSON reads config.json fields over HF's defaults.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	p := plain(hfDefaults())
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = Config(p)
	return nil
}

func (c *Config) dtype() dtypes.DType {
	if c.DType == dtypes.InvalidDType {
		return dtypes.Float32
	}
	return c.DType
}

// HasPooler reports whether the ContextPooler is part of the model.
func (c *Config) HasPooler() bool { return c.Pooler == nil || *c.Pooler }

// Embedding returns the width of the embedding tables.
func (c *Config) Embedding() int {
	if c.EmbeddingSize > 0 {
		return c.EmbeddingSize
	}
	return c.HiddenSize
}

// MaxRelative returns max_relative_positions resolved (< 1 means max_position_embeddings).
func (c *Config) MaxRelative() int {
	if c.MaxRelativePositions < 1 {
		return c.MaxPositionEmbeddings
	}
	return c.MaxRelativePositions
}

// Span is the attention span k: relative positions index rel_embeddings rows
// clamp(r + k, 0, 2k-1). It is position_buckets when > 0, else the resolved
// max_relative_positions.
func (c *Config) Span() int {
	if c.PositionBuckets > 0 {
		return c.PositionBuckets
	}
	return c.MaxRelative()
}

func (c *Config) has(t string) bool { return slices.Contains(c.PosAttType, t) }

func (c *Config) normRel() bool {
	for _, p := range strings.Split(strings.ToLower(c.NormRelEbd), "|") {
		if strings.TrimSpace(p) == "layer_norm" {
			return true
		}
	}
	return false
}

// scaleFactor is 1 + the number of relative attention terms: scores are divided by
// sqrt(head size · scaleFactor).
func (c *Config) scaleFactor() int {
	n := 1
	if c.has("c2p") {
		n++
	}
	if c.has("p2c") {
		n++
	}
	return n
}

var acts = []string{"gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "tanh"}

// Validate checks the configuration is usable.
func (c *Config) Validate() error {
	if err := c.CheckSizes("deberta config"); err != nil {
		return err
	}
	switch {
	case c.AttentionHeadSize != 0 && c.AttentionHeadSize != c.HiddenSize/c.NumAttentionHeads:
		return fmt.Errorf("deberta config: attention_head_size %d other than hidden_size / num_attention_heads (%d) is not supported",
			c.AttentionHeadSize, c.HiddenSize/c.NumAttentionHeads)
	case c.EmbeddingSize < 0:
		return fmt.Errorf("deberta config: embedding_size %d must be >= 0", c.EmbeddingSize)
	case c.MaxPositionEmbeddings <= 0:
		return fmt.Errorf("deberta config: max_position_embeddings %d must be > 0", c.MaxPositionEmbeddings)
	case c.TypeVocabSize < 0:
		return fmt.Errorf("deberta config: type_vocab_size %d must be >= 0", c.TypeVocabSize)
	case c.LayerNormEps <= 0:
		return fmt.Errorf("deberta config: layer_norm_eps %v must be > 0", c.LayerNormEps)
	case c.HiddenDropoutProb < 0 || c.HiddenDropoutProb >= 1 || c.AttentionProbsDropoutProb < 0 || c.AttentionProbsDropoutProb >= 1 ||
		c.PoolerDropout < 0 || c.PoolerDropout >= 1:
		return fmt.Errorf("deberta config: dropout probabilities (hidden_dropout_prob %v, attention_probs_dropout_prob %v, pooler_dropout %v) must be in [0, 1)",
			c.HiddenDropoutProb, c.AttentionProbsDropoutProb, c.PoolerDropout)
	case c.PoolerHiddenSize != 0 && c.PoolerHiddenSize != c.HiddenSize:
		return fmt.Errorf("deberta config: pooler_hidden_size %d must equal hidden_size %d", c.PoolerHiddenSize, c.HiddenSize)
	case c.ConvKernelSize > 0:
		return fmt.Errorf("deberta config: conv_kernel_size %d: the ConvLayer (deberta-v2-xlarge) is not supported", c.ConvKernelSize)
	case c.PadTokenID < 0 || c.PadTokenID >= c.VocabSize:
		return fmt.Errorf("deberta config: pad_token_id %d outside the vocabulary (size %d)", c.PadTokenID, c.VocabSize)
	}
	seen := map[string]bool{}
	for _, t := range c.PosAttType {
		if (t != "c2p" && t != "p2c") || seen[t] {
			return fmt.Errorf("deberta config: pos_att_type %q: want distinct values among c2p, p2c", []string(c.PosAttType))
		}
		seen[t] = true
	}
	for _, p := range strings.Split(strings.ToLower(c.NormRelEbd), "|") {
		if p = strings.TrimSpace(p); p != "none" && p != "layer_norm" {
			return fmt.Errorf("deberta config: norm_rel_ebd %q: want none or layer_norm", c.NormRelEbd)
		}
	}
	if c.RelativeAttention && c.PositionBuckets > 0 {
		// The log buckets need mid = buckets/2 >= 1 and log((max_relative-1)/mid) > 0.
		if mid := c.PositionBuckets / 2; mid < 1 || c.MaxRelative()-1 <= mid {
			return fmt.Errorf("deberta config: position_buckets %d needs max_relative_positions (resolved: %d) > position_buckets/2 + 1",
				c.PositionBuckets, c.MaxRelative())
		}
	}
	if dt := c.dtype(); dt != dtypes.Float32 && dt != dtypes.Float64 {
		return fmt.Errorf("deberta config: dtype %s not supported (Float32, Float64)", dt)
	}
	if !slices.Contains(acts[:4], c.HiddenAct) {
		return fmt.Errorf("deberta config: unsupported hidden_act %q (gelu, gelu_new, gelu_pytorch_tanh, relu)", c.HiddenAct)
	}
	if !slices.Contains(acts, c.PoolerHiddenAct) {
		return fmt.Errorf("deberta config: unsupported pooler_hidden_act %q (gelu, gelu_new, gelu_pytorch_tanh, relu, tanh)", c.PoolerHiddenAct)
	}
	return nil
}

// LoadConfig reads and validates an HF config.json.
func LoadConfig(path string) (*Config, error) {
	var c Config
	if err := jsonfile.Read(path, &c); err != nil {
		return nil, err
	}
	if c.ModelType != "" && c.ModelType != ModelType {
		return nil, fmt.Errorf("%s: model_type %q, want %q", path, c.ModelType, ModelType)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// Save writes the configuration as an HF config.json (model_type "deberta-v2").
func (c *Config) Save(path string) error {
	cc := *c
	cc.ModelType = ModelType
	if len(cc.Architectures) == 0 {
		cc.Architectures = []string{"DebertaV2Model"}
	}
	return hfweights.SaveJSON(path, &cc)
}
