// Package classifier is the sequence classifier (an encoder and a head) used by ToolRerank and as a retriever:
// [CLS] state → (the encoder's pooler layer, with pooling "pooler") → dropout → linear → n
// logits, variables "classifier.weight" [n, hidden] and "classifier.bias" [n] beside the
// encoder at the root. With pooling "pooler" the head is HF's XxxForSequenceClassification
// (BERT: dense + tanh; DeBERTa: the ContextPooler, dense + GELU); with "cls" (the default, and
// what configurations without the field mean) it reads the [CLS] state directly.
//
// One head type serves several uses:
//
//   - querytype: does a query need a single tool or several (the hierarchy level above the
//     API: ToolLens tool_name)? Softmax cross-entropy over 2 classes (or one logit with BCE);
//     ToolRerank picks its hierarchy-aware algorithm with it.
//   - mlc: multi-label classification over every API of the library (hidden × T head), one
//     BCE per API (or multi-positive softmax cross-entropy over all APIs); at inference the
//     scores rank all APIs, so it is a retriever.
//
// The cross-encoder (models/crossencoder) is the same head with one logit over a text pair.
package classifier

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/toolret/toolret/losses"
	"github.com/toolret/toolret/models/encoder"
)

// ConfigFile is the name of the classifier configuration in runs and checkpoints.
const ConfigFile = "classifier.json"

// Kinds of classifier.
const (
	KindQueryType = "querytype"
	KindMLC       = "mlc"
)

// Query-type labels.
const (
	LabelSingle = "single-tool"
	LabelMulti  = "multi-tool"
)

// Config defines a classifier.
type Config struct {
	Kind    string         `json:"kind"`
	Encoder encoder.Config `json:"encoder"`
	MaxLen  int            `json:"max_len"`
	// Labels names the classes: querytype [single-tool, multi-tool]; mlc the tool (API) ids.
	Labels []string `json:"labels"`
	// Loss: "ce" (softmax cross-entropy, single-label), "bce" (one sigmoid per output; for
	// querytype a single logit for multi-tool) or, for mlc, "softmax" (multi-positive softmax
	// cross-entropy over all tools, -Σ over positives of log-softmax, as the Tool2Vec paper's
	// code trains MLC).
	LossKind string `json:"loss"`
	// Pooling is the head's input: "cls" (the [CLS] state; "" means cls, as in configurations
	// written before heads had a pooling) or "pooler" (the encoder's pooler layer over [CLS]).
	Pooling encoder.Pooling `json:"pooling,omitempty"`
}

// Outputs is the number of logits of the head.
func (c *Config) Outputs() int {
	if c.Kind == KindQueryType && c.LossKind == "bce" {
		return 1
	}
	return len(c.Labels)
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Encoder == nil {
		return fmt.Errorf("classifier: no encoder config")
	}
	if err := c.Encoder.Validate(); err != nil {
		return err
	}
	switch c.Kind {
	case KindQueryType:
		if len(c.Labels) != 2 {
			return fmt.Errorf("classifier querytype: want 2 labels, have %d", len(c.Labels))
		}
		if c.LossKind != "ce" && c.LossKind != "bce" {
			return fmt.Errorf("classifier querytype: loss %q: want ce or bce", c.LossKind)
		}
	case KindMLC:
		if len(c.Labels) == 0 {
			return fmt.Errorf("classifier mlc: no labels")
		}
		if c.LossKind != "bce" && c.LossKind != "softmax" {
			return fmt.Errorf("classifier mlc: loss %q: want bce or softmax", c.LossKind)
		}
	default:
		return fmt.Errorf("classifier: kind %q: want querytype or mlc", c.Kind)
	}
	if c.MaxLen < 2 || c.MaxLen > c.Encoder.MaxPositions() {
		return fmt.Errorf("classifier: max length %d must be in [2, %d]", c.MaxLen, c.Encoder.MaxPositions())
	}
	if err := CheckPooling(c.Pooling, c.Encoder); err != nil {
		return fmt.Errorf("classifier: %w", err)
	}
	return nil
}

// HeadPooling returns p, or encoder.PoolCLS for "" (configurations written before heads had a
// pooling).
func HeadPooling(p encoder.Pooling) encoder.Pooling {
	if p == "" {
		return encoder.PoolCLS
	}
	return p
}

// CheckPooling validates the pooling p of a head over enc: cls (not over a causal encoder,
// whose first token's state is of that token alone: encoder.Causal), mean, pooler (enc must
// have its pooler layer) or "" (cls).
func CheckPooling(p encoder.Pooling, enc encoder.Config) error {
	causal := encoder.Causal(enc)
	switch HeadPooling(p) {
	case encoder.PoolMean:
		return nil
	case encoder.PoolCLS:
		if causal {
			return fmt.Errorf("head pooling %q: the %s encoder attends causally, so its first token's state is of that token alone; a head over the last token is not implemented (a classifier can use -pooling mean)", p, enc.ModelType())
		}
		return nil
	case encoder.PoolPooler:
		if !enc.HasPooler() && causal {
			return fmt.Errorf("head pooling %q: the %s encoder has no pooler layer and attends causally (its first token's state is of that token alone); a head over the last token is not implemented (a classifier can use -pooling mean)", p, enc.ModelType())
		}
		if !enc.HasPooler() {
			return fmt.Errorf("head pooling %q: the %s encoder has no pooler layer: use -pooling cls", p, enc.ModelType())
		}
		return nil
	}
	return fmt.Errorf("head pooling %q: want cls, mean or pooler", p)
}

// DefaultPooling is the head pooling of a new model over enc: "cls" for BERT (what toolret's
// BERT heads have always read) and "pooler" for other encoders (DeBERTa: the ContextPooler of
// HF's DebertaV2ForSequenceClassification; only BERT's tanh pooler can stand for a [CLS] head
// in HF layout, so other [CLS] heads cannot be exported).
func DefaultPooling(enc encoder.Config) encoder.Pooling {
	if enc.ModelType() == "bert" {
		return encoder.PoolCLS
	}
	return encoder.PoolPooler
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
	return encoder.UnmarshalConfig[Config](b, "classifier config")
}

// HeadVars are the path prefixes of Head's own variables (its linear layer; the pooler is
// the encoder's): what -head-lr trains at its own rate.
var HeadVars = []string{"/classifier/"}

// Head is the classification head over encoder states: hidden [B, S, H] pooled with p (cls:
// the [CLS] state; mean: the mean of the states mask keeps; pooler: the encoder's pooler layer over it, variables root/pooler/dense;
// "" means cls), dropout (training only, the encoder's hidden dropout), then a linear layer
// to n logits [B, n], with variables under root/classifier (HF layout: weight [n, H], bias
// [n]). With p pooler it computes HF's XxxForSequenceClassification (BERT, DeBERTa-v2/v3).
// The classifier and the cross-encoder both use it.
func Head(root *model.Scope, cfg encoder.Config, p encoder.Pooling, hidden, mask *Node, n int) *Node {
	g := hidden.Graph()
	cls := cfg.Pool(root, hidden, mask, HeadPooling(p))
	if p := cfg.Dropout(); p > 0 && root.IsTraining(g) {
		cls = layers.Dropout(root, cls, Scalar(g, cls.DType(), p))
	}
	s := root.At("classifier")
	h := cls.Shape().Dimensions[1]
	w := s.WithInitializer(initializer.RandomNormalFn(s, cfg.InitRange())).
		VariableWithShape("weight", shapes.Make(cls.DType(), n, h)).NodeValue(g)
	b := s.WithInitializer(initializer.Zero).VariableWithShape("bias", shapes.Make(cls.DType(), n)).NodeValue(g)
	return nn.Dense(cls, w, b, compute.DenseLayoutOutputsInput)
}

// Logits runs the model: ids and mask [B, S] (types may be nil) -> logits [B, Outputs()].
func (c *Config) Logits(root *model.Scope, ids, types, mask *Node) *Node {
	h := c.Encoder.Encode(root, ids, types, mask)
	return Head(root, c.Encoder, c.Pooling, h, mask, c.Outputs())
}

// Probabilities turns logits into per-output probabilities: softmax for "ce" and "softmax",
// sigmoid for "bce".
func (c *Config) Probabilities(logits *Node) *Node {
	if c.LossKind == "ce" || c.LossKind == "softmax" {
		return Softmax(logits, -1)
	}
	return Sigmoid(logits)
}

// Loss is the training loss of one batch: inputs ids and mask [B, S] and the targets
// [B, Outputs()] (one-hot for "ce", 0/1 per output for "bce").
func (c *Config) Loss(root *model.Scope, in []*Node) *Node {
	return c.LossOf(c.Logits(root, in[0], nil, in[1]), in[2])
}

// LossOf is the loss of logits [B, Outputs()] against targets (see Loss).
func (c *Config) LossOf(logits, targets *Node) *Node {
	if c.LossKind == "ce" {
		return losses.ListwiseCE(logits, targets, nil) // softmax CE with a one-hot target
	}
	if c.LossKind == "softmax" {
		return losses.MultiPositiveCE(logits, targets, nil, false)
	}
	return losses.BCEWithLogits(logits, targets, nil)
}
