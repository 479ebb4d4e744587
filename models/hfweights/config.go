package hfweights

import "fmt"

// Config holds the fields of an HF config.json that BERT's and DeBERTa-v2's configurations
// share (bert.Config and deberta.Config embed it; JSON reads and writes them at the top
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
