package hfweights

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"

	"github.com/toolret/toolret/internal/jsonfile"
)

// Config holds the fields of an HF config.json that BERT's, DeBERTa-v2's and MPNet's
// configurations share (bert.Config, deberta.Config and mpnet.Config embed it; JSON reads and writes them at the top
// level, in this order).
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
}

// CheckSizes reports an error, prefixed with what ("bert config"), unless the vocabulary
// and the layer sizes are positive and hidden_size is a multiple of num_attention_heads.
func (c *Config) CheckSizes(what string) error {
	switch {
	case c.VocabSize <= 0:
		return fmt.Errorf("%s: vocab_size %d must be > 0", what, c.VocabSize)
	case c.HiddenSize <= 0 || c.NumHiddenLayers <= 0 || c.NumAttentionHeads <= 0 || c.IntermediateSize <= 0:
		return fmt.Errorf("%s: hidden_size %d, num_hidden_layers %d, num_attention_heads %d, intermediate_size %d must all be > 0",
			what, c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize)
	case c.HiddenSize%c.NumAttentionHeads != 0:
		return fmt.Errorf("%s: hidden_size %d is not a multiple of num_attention_heads %d", what, c.HiddenSize, c.NumAttentionHeads)
	}
	return nil
}

// CheckLayers reports an error, prefixed with what, unless layer_norm_eps is positive, the
// dropout probabilities are in [0, 1), dt (the computation's dtype) is Float32 or Float64 and
// hidden_act is one the BERT-style layers apply (gelu, gelu_new, gelu_pytorch_tanh, relu).
func (c *Config) CheckLayers(what string, dt dtypes.DType) error {
	switch {
	case c.LayerNormEps <= 0:
		return fmt.Errorf("%s: layer_norm_eps %v must be > 0", what, c.LayerNormEps)
	case c.HiddenDropoutProb < 0 || c.HiddenDropoutProb >= 1 || c.AttentionProbsDropoutProb < 0 || c.AttentionProbsDropoutProb >= 1:
		return fmt.Errorf("%s: dropout probabilities must be in [0, 1)", what)
	case dt != dtypes.Float32 && dt != dtypes.Float64:
		return fmt.Errorf("%s: dtype %s not supported (Float32, Float64)", what, dt)
	}
	switch c.HiddenAct {
	case "gelu", "gelu_new", "gelu_pytorch_tanh", "relu":
		return nil
	}
	return fmt.Errorf("%s: unsupported hidden_act %q (gelu, gelu_new, relu)", what, c.HiddenAct)
}

// SaveJSON writes v (a configuration) as indented JSON to path, atomically
// (jsonfile.Write): an HF config.json.
func SaveJSON(path string, v any) error { return jsonfile.Write(path, v) }
