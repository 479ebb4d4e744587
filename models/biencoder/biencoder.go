// Package biencoder is the dense tool retriever: encoder towers that embed queries and tool
// texts into one space, trained with InfoNCE (in-batch and hard negatives, false-negative
// masking). The same definition serves training, evaluation, encoding and export.
package biencoder

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/losses"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/models/hflayers"
)

// Towers.
const (
	QueryTower = "query"
	ToolTower  = "tool"
)

// Config defines a bi-encoder.
type Config struct {
	Encoder encoder.Config  `json:"encoder"`
	Pooling encoder.Pooling `json:"pooling"`
	// Shared uses one encoder for queries and tools (variables at the store root, HF layout);
	// otherwise each tower has its own under /query and /tool.
	Shared      bool    `json:"shared"`
	QueryMaxLen int     `json:"query_max_len"`
	ToolMaxLen  int     `json:"tool_max_len"`
	Similarity  string  `json:"similarity"` // cosine or dot
	Temperature float64 `json:"temperature"`
	Symmetric   bool    `json:"symmetric"`
	NoMasking   bool    `json:"no_masking"`
	// Objective is the training objective: ObjectiveQuery2Tool (InfoNCE between queries and
	// tool texts; "" in configurations written before objectives) or ObjectiveQuery2Query
	// (the Tool2Vec retriever: triplets of training queries, query2query.go).
	Objective string `json:"objective,omitempty"`
	// Margin of the query2query triplet loss.
	Margin float64 `json:"margin,omitempty"`
	// Marker is the iteration marker of a retriever trained on iterative feedback
	// (feedback.go): a format with one %d, put before the instruction of iteration t
	// ("Iteration %d: "); empty for other retrievers. Queries are embedded as given: the
	// iterative retrieval applies it (Mark).
	Marker string `json:"marker,omitempty"`
	// QueryPrompt and ToolPrompt are put before every query and every tool text the model
	// embeds, in training and after it (Prompt): a pre-trained model's prompts (bge's query
	// instruction, e5's "query: " and "passage: "), as sentence-transformers' "query" and
	// "document" prompts. Empty for none.
	QueryPrompt string `json:"query_prompt,omitempty"`
	ToolPrompt  string `json:"tool_prompt,omitempty"`
	// LoRA, when set, adapts the encoder's target Linear layers with low-rank adapters
	// (encoder.LoRA, hflayers.LoRA): the adapter weights live beside the base weights in the
	// store, every graph that embeds adds their update, and in training only they are
	// trainable (the base weights are frozen). An export merges them (MergeLoRA) unless
	// asked for a PEFT adapter directory.
	LoRA *encoder.LoRA `json:"lora,omitempty"`
	// Compute is the dtype of the encoder's matrix multiplications in every graph this
	// configuration builds (hflayers.ComputeParam): dtypes.BFloat16 for mixed precision
	// (the variables stay float32); the zero value or Float32 computes in float32. An
	// execution setting (-precision), not part of the stored model.
	Compute dtypes.DType `json:"-"`
}

// Prompt returns the prefix of a tower's texts (QueryTower: QueryPrompt, ToolTower:
// ToolPrompt).
func (c *Config) Prompt(tower string) string {
	switch tower {
	case QueryTower:
		return c.QueryPrompt
	case ToolTower:
		return c.ToolPrompt
	}
	return ""
}

// Cosine reports whether the model scores by cosine similarity (its embeddings are
// L2-normalised).
func (c *Config) Cosine() bool {
	sim, err := losses.ParseSimilarity(c.Similarity)
	return err == nil && sim == losses.SimCosine
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Encoder == nil {
		return fmt.Errorf("biencoder: no encoder config")
	}
	if err := c.Encoder.Validate(); err != nil {
		return err
	}
	if _, err := encoder.ParsePooling(string(c.Pooling)); err != nil || c.Pooling == encoder.PoolNone {
		return fmt.Errorf("biencoder: pooling %q: want cls, mean or pooler", c.Pooling)
	}
	if c.Pooling == encoder.PoolPooler && !c.Encoder.HasPooler() {
		return fmt.Errorf("biencoder: pooling %q needs a pooler layer", c.Pooling)
	}
	if n := c.Encoder.MaxPositions(); c.QueryMaxLen < 2 || c.ToolMaxLen < 2 || c.QueryMaxLen > n || c.ToolMaxLen > n {
		return fmt.Errorf("biencoder: max lengths (query %d, tool %d) must be in [2, %d]", c.QueryMaxLen, c.ToolMaxLen, n)
	}
	if _, err := losses.ParseSimilarity(c.Similarity); err != nil {
		return fmt.Errorf("biencoder: %w", err)
	}
	if c.Temperature <= 0 {
		return fmt.Errorf("biencoder: temperature %v must be > 0", c.Temperature)
	}
	if err := CheckMarker(c.Marker); c.Marker != "" && err != nil {
		return err
	}
	if c.Marker != "" && c.QueryPrompt != "" {
		return fmt.Errorf("biencoder: query prompt %q and iteration marker %q: a feedback retriever's queries carry its marker, not a prompt", c.QueryPrompt, c.Marker)
	}
	if c.LoRA != nil {
		if err := encoder.CheckLoRA(c.Encoder, *c.LoRA); err != nil {
			return fmt.Errorf("biencoder: %w", err)
		}
	}
	return c.validateObjective()
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
	return encoder.UnmarshalConfig[Config](b, "biencoder config")
}

// TowerBase returns the scope path of a tower's encoder variables.
func (c *Config) TowerBase(tower string) string {
	if c.Shared {
		return ""
	}
	return "/" + tower
}

// Embed encodes a padded batch with a tower: ids and mask [batch, seq] -> [batch, hidden],
// L2-normalised for cosine similarity. With LoRA the adapters add their update, and every
// other variable of the tower is marked non-trainable. With Compute the encoder's products
// run in that dtype (mixed precision); the embedding is float32 either way.
func (c *Config) Embed(root *model.Scope, tower string, ids, mask *Node) *Node {
	s := encoder.In(root, c.TowerBase(tower))
	if c.LoRA != nil {
		l := *c.LoRA
		s.SetGraphParam(ids.Graph(), hflayers.LoRAParam, &l)
	}
	if c.Compute != dtypes.InvalidDType && c.Compute != dtypes.Float32 {
		s.SetGraphParam(ids.Graph(), hflayers.ComputeParam, c.Compute)
	}
	h := c.Encoder.Encode(s, ids, nil, mask)
	e := c.Encoder.Pool(s, h, mask, c.Pooling)
	if c.Compute != dtypes.InvalidDType && c.Compute != dtypes.Float32 {
		s.SetGraphParam(ids.Graph(), hflayers.ComputeParam, nil)
	}
	if c.LoRA != nil {
		s.SetGraphParam(ids.Graph(), hflayers.LoRAParam, nil)
		freezeBase(s)
	}
	if sim, _ := losses.ParseSimilarity(c.Similarity); sim == losses.SimCosine {
		e = losses.Normalize(e)
	}
	return e
}

// Loss is the training loss of one batch. With the query2query objective see tripletLoss;
// otherwise InfoNCE with inputs: query ids and mask [B, Sq], positive tool
// ids and mask [B, St], the false-negative mask [B, B(+B*k)] and, with k hard negatives per
// query, their ids and mask [B*k, St].
func (c *Config) Loss(root *model.Scope, in []*Node) *Node {
	return c.loss(root, in, Regularization{})
}

// loss is Loss with the towers embedded as reg says (a locked tower at inference).
func (c *Config) loss(root *model.Scope, in []*Node, reg Regularization) *Node {
	if c.Objective == ObjectiveQuery2Query {
		return c.tripletLoss(root, in)
	}
	q := reg.embed(c, root, QueryTower, in[0], in[1])
	t := reg.embed(c, root, ToolTower, in[2], in[3])
	var negs *Node
	if len(in) == 7 {
		negs = reg.embed(c, root, ToolTower, in[5], in[6])
	}
	return c.infoNCE(q, t, negs, in[4])
}
