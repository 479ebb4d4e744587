// Package pretrain is unsupervised pre-training of an encoder on a tool corpus (the tool
// texts and the training queries' texts; no relevance judgement): a masked-language-model
// objective (BERT's 15% masking, an HF BertForMaskedLM head tied to the word embeddings) and
// a contrastive one in the style of Contriever (two views of one text are positives: two
// independent random crops, or a tool's name and description; in-batch negatives, symmetric
// InfoNCE over mean-pooled, cosine-compared embeddings).
//
// The encoder's variables live at the store root in HF layout, where a shared bi-encoder
// keeps them, so a pre-training run is also a bi-encoder run (it writes a biencoder.json
// describing the encoder with mean pooling and cosine similarity) that the bi-encoder,
// cross-encoder and classifier commands warm-start from. The MLM head lives under
// /cls/predictions, the scopes of HF's cls.predictions.* tensors.
package pretrain

import (
	"fmt"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/toolret/toolret/losses"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
)

// ConfigFile is the name of the pre-training configuration in runs and checkpoints.
const ConfigFile = "pretrain.json"

// Objectives.
const (
	ObjectiveMLM         = "mlm"
	ObjectiveContrastive = "contrastive"
)

// Views of a text for the contrastive objective.
const (
	ViewsCrop   = "crop"   // two independent random crops
	ViewsFields = "fields" // a tool's name and description (crops for texts without them)
	ViewsBoth   = "both"   // fields or crops, drawn per example
)

// MinCrop is the fewest tokens a crop keeps (all of a shorter text).
const MinCrop = 4

// HeadScope is the scope path of the MLM head (HF's cls.predictions).
const HeadScope = "/cls/predictions"

// Config defines a pre-training run.
type Config struct {
	Encoder encoder.Config `json:"encoder"`
	// MaxLen is the longest input (special tokens included): MLM windows and views.
	MaxLen int `json:"max_len"`
	// MLM and Contrastive are the objectives; the loss is mlm + ContrastiveWeight × contrastive.
	MLM               bool    `json:"mlm"`
	Contrastive       bool    `json:"contrastive"`
	ContrastiveWeight float64 `json:"contrastive_weight"`
	// MaskRate is the fraction of a text's maskable tokens predicted (BERT: 0.15).
	MaskRate float64 `json:"mask_rate"`
	// Temperature of the InfoNCE over cosine similarities.
	Temperature float64 `json:"temperature"`
	// CropMin and CropMax bound the fraction of a text's tokens a crop keeps (uniform);
	// CropDelete is the probability of deleting each token of a crop.
	CropMin    float64 `json:"crop_min"`
	CropMax    float64 `json:"crop_max"`
	CropDelete float64 `json:"crop_delete"`
	// Views is ViewsCrop, ViewsFields or ViewsBoth.
	Views string `json:"views"`
	// Pooling of the contrastive embeddings (mean).
	Pooling encoder.Pooling `json:"pooling"`
}

// ParseObjectives parses a comma-separated list of objectives (mlm, contrastive).
func ParseObjectives(s string) (mlm, contrastive bool, err error) {
	for _, f := range strings.Split(s, ",") {
		switch strings.TrimSpace(f) {
		case ObjectiveMLM:
			mlm = true
		case ObjectiveContrastive:
			contrastive = true
		default:
			return false, false, fmt.Errorf("objective %q: want a comma-separated list of %s and %s", f, ObjectiveMLM, ObjectiveContrastive)
		}
	}
	return mlm, contrastive, nil
}

// Objectives returns the objectives as ParseObjectives reads them.
func (c *Config) Objectives() string {
	var o []string
	if c.MLM {
		o = append(o, ObjectiveMLM)
	}
	if c.Contrastive {
		o = append(o, ObjectiveContrastive)
	}
	return strings.Join(o, ",")
}

// Metrics returns the dev metrics an evaluation reports that can select the best checkpoint
// (higher is better): mlm_acc and contrastive_acc, those of the configured objectives.
func (c *Config) Metrics() []string {
	var m []string
	if c.Contrastive {
		m = append(m, "contrastive_acc")
	}
	if c.MLM {
		m = append(m, "mlm_acc")
	}
	return m
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Encoder == nil {
		return fmt.Errorf("pretrain: no encoder config")
	}
	if err := c.Encoder.Validate(); err != nil {
		return err
	}
	switch {
	case !c.MLM && !c.Contrastive:
		return fmt.Errorf("pretrain: no objective (want %s, %s or both)", ObjectiveMLM, ObjectiveContrastive)
	case c.MaxLen < 3 || c.MaxLen > c.Encoder.MaxPositions():
		return fmt.Errorf("pretrain: max length %d: must be in [3, %d] (the encoder's positions)", c.MaxLen, c.Encoder.MaxPositions())
	case c.Pooling != encoder.PoolMean:
		return fmt.Errorf("pretrain: pooling %q: only mean", c.Pooling)
	}
	if c.MLM && !(c.MaskRate > 0 && c.MaskRate < 1) {
		return fmt.Errorf("pretrain: mask rate %v: must be in (0, 1)", c.MaskRate)
	}
	if !c.Contrastive {
		return nil
	}
	switch {
	case !(c.Temperature > 0):
		return fmt.Errorf("pretrain: temperature %v: must be > 0", c.Temperature)
	case !(c.ContrastiveWeight > 0):
		return fmt.Errorf("pretrain: contrastive weight %v: must be > 0", c.ContrastiveWeight)
	case !(c.CropMin > 0 && c.CropMin <= c.CropMax && c.CropMax <= 1):
		return fmt.Errorf("pretrain: crop fractions [%v, %v]: want 0 < min <= max <= 1", c.CropMin, c.CropMax)
	case !(c.CropDelete >= 0 && c.CropDelete < 1):
		return fmt.Errorf("pretrain: crop deletion %v: must be in [0, 1)", c.CropDelete)
	case c.Views != ViewsCrop && c.Views != ViewsFields && c.Views != ViewsBoth:
		return fmt.Errorf("pretrain: views %q: want %s, %s or %s", c.Views, ViewsCrop, ViewsFields, ViewsBoth)
	}
	return nil
}

// Marshal returns the JSON form stored in runs and checkpoints.
func (c *Config) Marshal() []byte { return encoder.MarshalConfig(c) }

// UnmarshalJSON reads the "encoder" object with the encoder's implementation.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	enc, err := encoder.UnmarshalModel(b, (*plain)(c))
	c.Encoder = enc
	return err
}

// Unmarshal parses a stored configuration.
func Unmarshal(b []byte) (*Config, error) {
	return encoder.UnmarshalConfig[Config](b, "pretrain config")
}

// BiEncoder returns the bi-encoder the pre-trained encoder is: one shared tower at the store
// root, mean pooling, cosine similarity, the contrastive temperature (0.05 without the
// contrastive objective), queries and tools up to MaxLen tokens. A run stores it as
// biencoder.json: the bi-encoder commands load and warm-start from it.
func (c *Config) BiEncoder() *biencoder.Config {
	t := c.Temperature
	if !c.Contrastive || !(t > 0) {
		t = 0.05
	}
	return &biencoder.Config{Encoder: c.Encoder.WithPooler(false), Pooling: encoder.PoolMean, Shared: true,
		QueryMaxLen: c.MaxLen, ToolMaxLen: c.MaxLen, Similarity: "cosine", Temperature: t}
}

// Inputs of one batch, in order: with MLM the masked ids and mask [B, L], the flat indices
// (b*L + position) of the predicted tokens, their labels (int32) and weights (float32, 0 for
// padding entries) [B*M]; with the contrastive objective the two views' ids and masks
// [B, L'] each (one shared length).
const (
	mlmInputs         = 5
	contrastiveInputs = 4
)

// NumInputs is the number of batch inputs of the configured objectives.
func (c *Config) NumInputs() int {
	n := 0
	if c.MLM {
		n += mlmInputs
	}
	if c.Contrastive {
		n += contrastiveInputs
	}
	return n
}

// parts are the graph's per-batch quantities.
type parts struct {
	mlmCE, mlmCorrect, mlmCount *Node // sums over the predicted tokens (scalars)
	con, conCorrect             *Node // contrastive loss (mean) and correct top-1 retrievals (of 2B)
	rows                        int   // examples in the batch
}

// forward builds the objectives' graph over a batch.
func (c *Config) forward(root *model.Scope, in []*Node) parts {
	if len(in) != c.NumInputs() {
		exceptions.Panicf("pretrain: %d inputs, want %d (objectives %s)", len(in), c.NumInputs(), c.Objectives())
	}
	var p parts
	p.rows = in[0].Shape().Dimensions[0]
	if c.MLM {
		ids, mask, pos, labels, w := in[0], in[1], in[2], in[3], in[4]
		h := c.Encoder.Encode(root, ids, nil, mask) // [B, L, H]
		dims := h.Shape().Dimensions
		flat := Reshape(h, dims[0]*dims[1], dims[2])
		sel := Gather(flat, InsertAxes(ConvertDType(pos, dtypes.Int32), -1)) // [N, H]
		logits := c.mlmLogits(root, sel)                                     // [N, V]
		w = ConvertDType(w, logits.DType())
		lab := ConvertDType(labels, dtypes.Int32)
		v := logits.Shape().Dimensions[1]
		maxes := StopGradient(ReduceAndKeep(logits, ReduceMax, -1))
		lse := Add(Reshape(maxes, -1), Log(ReduceSum(Exp(Sub(logits, maxes)), -1)))
		target := ReduceSum(Mul(logits, OneHot(lab, v, logits.DType())), -1)
		p.mlmCE = ReduceAllSum(Mul(Sub(lse, target), w))
		hit := ConvertDType(Equal(ArgMax(logits, -1, dtypes.Int32), lab), logits.DType())
		p.mlmCorrect = ReduceAllSum(Mul(hit, w))
		p.mlmCount = ReduceAllSum(w)
		in = in[mlmInputs:]
	}
	if c.Contrastive {
		a := c.embed(root, in[0], in[1])
		b := c.embed(root, in[2], in[3])
		p.con = losses.InfoNCE(a, b, nil, nil, losses.InfoNCEConfig{Temperature: c.Temperature, Similarity: losses.SimCosine, Symmetric: true})
		s := losses.Scores(a, b, losses.SimCosine) // [B, B]
		g := s.Graph()
		n := s.Shape().Dimensions[0]
		diag := Iota(g, shapes.Make(dtypes.Int32, n), 0)
		rowHit := Equal(ArgMax(s, 1, dtypes.Int32), diag)
		colHit := Equal(ArgMax(s, 0, dtypes.Int32), diag)
		p.conCorrect = Add(ReduceAllSum(ConvertDType(rowHit, s.DType())), ReduceAllSum(ConvertDType(colHit, s.DType())))
	}
	return p
}

// embed is the mean-pooled encoding of ids and mask [B, L] -> [B, H].
func (c *Config) embed(root *model.Scope, ids, mask *Node) *Node {
	return c.Encoder.Pool(root, c.Encoder.Encode(root, ids, nil, mask), mask, c.Pooling)
}

// mlmLogits is HF's BertLMPredictionHead over token states x [N, H]: transform (dense,
// GELU, LayerNorm) to the word-embedding width, then the decoder tied to the word embeddings
// plus an output bias: [N, vocab]. Variables: /cls/predictions/transform/dense/{weight,bias},
// /cls/predictions/transform/LayerNorm/{weight,bias}, /cls/predictions/bias (HF's
// cls.predictions.*; the decoder weight is embeddings.word_embeddings.weight).
func (c *Config) mlmLogits(root *model.Scope, x *Node) *Node {
	g := x.Graph()
	words := encoder.Variable(root.Store(), "", "embeddings.word_embeddings.weight")
	if words == nil {
		exceptions.Panicf("pretrain: the encoder has no embeddings.word_embeddings.weight to tie the MLM decoder to")
	}
	wv := words.NodeValue(g) // [V, E]
	if wv.DType() != x.DType() {
		wv = ConvertDType(wv, x.DType())
	}
	vocab, e := wv.Shape().Dimensions[0], wv.Shape().Dimensions[1]
	h := x.Shape().Dimensions[1]
	dt := x.DType()
	head := encoder.In(root, HeadScope)
	tr := head.At("transform")
	dense := tr.At("dense")
	w := dense.WithInitializer(initializer.RandomNormalFn(dense, c.Encoder.InitRange())).VariableWithShape("weight", shapes.Make(dt, e, h)).NodeValue(g)
	b := dense.WithInitializer(initializer.Zero).VariableWithShape("bias", shapes.Make(dt, e)).NodeValue(g)
	y := nn.Dense(x, w, b, compute.DenseLayoutOutputsInput, activation.TypeGelu)
	ln := tr.At("LayerNorm")
	gamma := ln.WithInitializer(initializer.One).VariableWithShape("weight", shapes.Make(dt, e)).NodeValue(g)
	beta := ln.WithInitializer(initializer.Zero).VariableWithShape("bias", shapes.Make(dt, e)).NodeValue(g)
	y = nn.LayerNorm(y, []int{1}, 1e-12, gamma, beta, nil)
	bias := head.WithInitializer(initializer.Zero).VariableWithShape("bias", shapes.Make(dt, vocab)).NodeValue(g)
	return Add(Einsum("ne,ve->nv", y, wv), InsertAxes(bias, 0))
}

// Loss is the training loss of one batch: mean cross-entropy over the predicted tokens plus
// ContrastiveWeight × the symmetric InfoNCE of the two views.
func (c *Config) Loss(root *model.Scope, in []*Node) *Node {
	p := c.forward(root, in)
	var loss *Node
	if c.MLM {
		loss = Div(p.mlmCE, MaxScalar(p.mlmCount, 1))
	}
	if c.Contrastive {
		con := MulScalar(p.con, c.ContrastiveWeight)
		if loss == nil {
			loss = con
		} else {
			loss = Add(loss, ConvertDType(con, loss.DType()))
		}
	}
	return loss
}

// Stats is the evaluation graph of one batch: [mlm CE sum, mlm correct, mlm count,
// contrastive loss × rows, contrastive correct, 2 × rows] (float32; zeros for an objective
// not configured).
func (c *Config) Stats(root *model.Scope, in []*Node) *Node {
	p := c.forward(root, in)
	g := in[0].Graph()
	zero := ScalarZero(g, dtypes.Float32)
	f := func(x *Node) *Node {
		if x == nil {
			return zero
		}
		return ConvertDType(x, dtypes.Float32)
	}
	var conRows, pairs *Node = zero, zero
	if c.Contrastive {
		conRows = MulScalar(f(p.con), float64(p.rows))
		pairs = Scalar(g, dtypes.Float32, 2*p.rows)
	}
	return Stack([]*Node{f(p.mlmCE), f(p.mlmCorrect), f(p.mlmCount), conRows, f(p.conCorrect), pairs}, 0)
}
