// Package xlmroberta is the XLM-RoBERTa encoder (HF model_type "xlm-roberta": xlm-roberta-*,
// multilingual-e5-*, bge-m3, paraphrase-multilingual-*) as GoMLX graph code, with HuggingFace
// checkpoint loading and saving. XLM-RoBERTa is BERT's layer stack (models/bert's Layers and
// Pool run it) with RoBERTa's embeddings: absolute positions are numbered after the padding id
// (a real token's position is pad_token_id + its 1-based index among the real tokens, as HF's
// create_position_ids_from_input_ids counts them; padding gets pad_token_id), so a model of
// max_position_embeddings 514 takes 512 tokens; and one token type (type_vocab_size 1, every
// token type 0). Parameter names are BERT's; task models prefix them with "roberta.".
//
// Other packages use it through models/encoder, which registers it as model_type
// "xlm-roberta". Its tokenizer is the SentencePiece Unigram one of its tokenizer.json
// (package tokenize: Metaspace, <s> A </s>).
package xlmroberta

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/toolret/toolret/models/bert"
	"github.com/toolret/toolret/models/hfweights"
)

// ModelType is the HF model_type.
const ModelType = "xlm-roberta"

// Prefix is HF's base_model_prefix: task models name the encoder's tensors "roberta.<name>".
const Prefix = "roberta"

// Config mirrors the fields of HF's XLMRobertaConfig (config.json) that define the network.
// The embedded bert.Config carries the fields BERT shares (and its ModelType, Architectures,
// Pooler and DType).
type Config struct {
	bert.Config
	BOSTokenID int `json:"bos_token_id"`
	EOSTokenID int `json:"eos_token_id"`
	// PositionEmbeddingType is HF's position_embedding_type: only "absolute" (every released
	// XLM-RoBERTa) is supported.
	PositionEmbeddingType string `json:"position_embedding_type,omitempty"`
}

func (c *Config) dtype() dtypes.DType {
	if c.DType == dtypes.InvalidDType {
		return dtypes.Float32
	}
	return c.DType
}

// Default returns xlm-roberta-base's configuration (the architecture of multilingual-e5-base).
func Default() *Config {
	return &Config{
		Config: bert.Config{
			Config: hfweights.Config{
				VocabSize: 250002, HiddenSize: 768, NumHiddenLayers: 12, NumAttentionHeads: 12,
				IntermediateSize: 3072, HiddenAct: "gelu", HiddenDropoutProb: 0.1,
				AttentionProbsDropoutProb: 0.1, MaxPositionEmbeddings: 514, TypeVocabSize: 1,
				InitializerRange: 0.02, LayerNormEps: 1e-5, PadTokenID: 1,
			},
			ModelType: ModelType, Architectures: []string{"XLMRobertaModel"},
		},
		BOSTokenID: 0, EOSTokenID: 2, PositionEmbeddingType: "absolute",
	}
}

// MaxTokens is the longest sequence the absolute positions cover: positions are numbered
// from pad_token_id + 1.
func (c *Config) MaxTokens() int { return c.MaxPositionEmbeddings - c.PadTokenID - 1 }

// Validate checks the configuration is usable.
func (c *Config) Validate() error {
	if err := c.CheckSizes("xlm-roberta config"); err != nil {
		return err
	}
	switch {
	case c.PadTokenID < 0 || c.PadTokenID >= c.VocabSize:
		return fmt.Errorf("xlm-roberta config: pad_token_id %d outside the vocabulary [0, %d)", c.PadTokenID, c.VocabSize)
	case c.MaxTokens() <= 0:
		return fmt.Errorf("xlm-roberta config: max_position_embeddings %d leaves no position after pad_token_id %d", c.MaxPositionEmbeddings, c.PadTokenID)
	case c.TypeVocabSize <= 0:
		return fmt.Errorf("xlm-roberta config: type_vocab_size %d must be > 0", c.TypeVocabSize)
	case c.PositionEmbeddingType != "" && c.PositionEmbeddingType != "absolute":
		return fmt.Errorf("xlm-roberta config: position_embedding_type %q not supported (absolute)", c.PositionEmbeddingType)
	}
	return c.CheckLayers("xlm-roberta config", c.dtype())
}

// LoadConfig reads an HF config.json.
func LoadConfig(path string) (*Config, error) {
	return hfweights.LoadConfig(path, Default())
}

// Save writes the configuration as an HF config.json.
func (c *Config) Save(path string) error { return hfweights.SaveJSON(path, c) }
