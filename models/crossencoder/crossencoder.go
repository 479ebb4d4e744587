// Package crossencoder is ToolRerank's reranker: an encoder over "[CLS] query [SEP] tool text [SEP]"
// (token types 0 then 1, longest-first truncation; encoders without token-type embeddings, as
// DeBERTa-v3, tell the texts apart by [SEP] alone), classifier.Head with one logit over the
// [CLS] state (pooling "cls") or the encoder's pooler layer ("pooler", HF's
// XxxForSequenceClassification), score = sigmoid(logit). It is trained on (query, positive API) pairs with hard negatives
// drawn from a retriever's top-m (binary cross-entropy, or list-wise softmax cross-entropy
// over [positive + negatives]) and scores rerank.Scorer pairs at inference.
package crossencoder

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/losses"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/encoder"
)

// ConfigFile is the name of the cross-encoder configuration in runs and checkpoints.
const ConfigFile = "crossencoder.json"

// Losses.
const (
	LossBCE      = "bce"
	LossListwise = "listwise"
)

// Config defines a cross-encoder.
type Config struct {
	Encoder  encoder.Config `json:"encoder"`
	MaxLen   int            `json:"max_len"` // tokens of the pair, specials included
	LossKind string         `json:"loss"`
	// Pooling is the head's input, as classifier.Config.Pooling: "cls" ("" in configurations
	// written before heads had a pooling) or "pooler".
	Pooling encoder.Pooling `json:"pooling,omitempty"`
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Encoder == nil {
		return fmt.Errorf("crossencoder: no encoder config")
	}
	if err := c.Encoder.Validate(); err != nil {
		return err
	}
	// Type 0 for the query, 1 for the tool text; an encoder without token-type embeddings
	// (type_vocab_size 0: DeBERTa-v3, which ignores token types) sees the [SEP] between them
	// only. BERT's config refuses type_vocab_size 0. XLM-RoBERTa's one type is every token's
	// (encoder.PairsWithOneType): <s> query </s></s> tool </s> tells the texts apart.
	if n := c.Encoder.TypeVocab(); n == 1 && !encoder.PairsWithOneType(c.Encoder) {
		return fmt.Errorf("crossencoder: type_vocab_size %d: pairs need 2 token types (or none, as DeBERTa-v3)", n)
	}
	if c.MaxLen < 3 || c.MaxLen > c.Encoder.MaxPositions() {
		return fmt.Errorf("crossencoder: max length %d must be in [3, %d]", c.MaxLen, c.Encoder.MaxPositions())
	}
	if c.LossKind != LossBCE && c.LossKind != LossListwise {
		return fmt.Errorf("crossencoder: loss %q: want bce or listwise", c.LossKind)
	}
	if classifier.HeadPooling(c.Pooling) == encoder.PoolMean {
		return fmt.Errorf("crossencoder: head pooling %q: want cls or pooler (the head reads the pair's first token)", c.Pooling)
	}
	if err := classifier.CheckPooling(c.Pooling, c.Encoder); err != nil {
		return fmt.Errorf("crossencoder: %w", err)
	}
	return nil
}

// Marshal returns the JSON form stored in runs and checkpoints.
func (c *Config) Marshal() []byte { return encoder.MarshalConfig(c) }

// UnmarshalJSON reads the "encoder" object, or the "bert" object of configurations written
// before encoders were pluggable.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	enc, err := encoder.UnmarshalModel(b, (*plain)(c))
	c.Encoder = enc
	return err
}

// Unmarshal parses a stored configuration.
func Unmarshal(b []byte) (*Config, error) {
	return encoder.UnmarshalConfig[Config](b, "crossencoder config")
}

// Logits scores pairs: ids, types and mask [B, S] -> logits [B].
func (c *Config) Logits(root *model.Scope, ids, types, mask *Node) *Node {
	h := c.Encoder.Encode(root, ids, types, mask)
	l := classifier.Head(root, c.Encoder, c.Pooling, h, mask, 1)
	return Reshape(l, l.Shape().Dimensions[0])
}

// Loss is the training loss of one batch of G groups, each a positive pair followed by k
// negative pairs: ids, types, mask [G*(1+k), S] and labels [G, 1+k] (1 for the positive).
// BCE averages over every pair; listwise is the softmax cross-entropy of each group.
func (c *Config) Loss(root *model.Scope, in []*Node) *Node {
	logits := c.Logits(root, in[0], in[1], in[2])
	labels := in[3]
	logits = Reshape(logits, labels.Shape().Dimensions...)
	if c.LossKind == LossListwise {
		return losses.ListwiseCE(logits, labels, nil)
	}
	return losses.BCEWithLogits(logits, labels, nil)
}
