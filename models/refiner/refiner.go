// Package refiner is the ToolRefiner of the Tool2Vec paper (usage-driven tool retrieval): a
// second stage that reads a query together with the Tool2Vec vectors of a first stage's top-N
// tools and scores all N at once.
//
// The input sequence is the query's token embeddings "[CLS] q [SEP]" (the encoder's embedding
// layer) followed by N slots; slot i is Linear(vector dim → hidden) of candidate i's tool
// vector (plus, optionally, a learned slot-position embedding). The encoder's layers attend
// over the whole sequence (padded tokens and slots masked); one shared Linear(hidden → 1) on
// each slot's output state gives logits [B, N]. The tool vectors are a non-trainable table
// stored with the model ("tool_vectors/weight" [tools, dim]), so a checkpoint is
// self-contained. Each row's slots follow its own last query token (not the batch's padded
// length), so a query's scores do not depend on the batch it is scored in.
package refiner

import (
	"fmt"
	"math"
	"slices"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/toolret/toolret/candidates"
	"github.com/toolret/toolret/losses"
	"github.com/toolret/toolret/models/encoder"
)

// ConfigFile is the name of the refiner configuration in runs and checkpoints.
const ConfigFile = "refiner.json"

// Losses.
const (
	// LossSoftmax is softmax over the N slots with every positive a target:
	// -Σ_{positives} log q (the paper's multi-positive softmax, summed).
	LossSoftmax = "softmax"
	// LossSoftmaxNorm is the same divided by the number of positives (ListNet with 0/1 labels).
	LossSoftmaxNorm = "softmax-norm"
	// LossBCE is one sigmoid BCE per slot (the paper's public code).
	LossBCE = "bce"
)

// Slot-position modes.
const (
	SlotPosNone    = "none"    // slots carry no position of their own
	SlotPosLearned = "learned" // a learned [N, hidden] embedding added to slot i
)

// Config defines a refiner.
type Config struct {
	Encoder encoder.Config `json:"encoder"`
	// MaxLen is the longest query, [CLS] and [SEP] included.
	MaxLen int `json:"max_len"`
	// N is the number of candidate slots.
	N int `json:"n"`
	// Tools and Dim are the shape of the tool-vector table.
	Tools int `json:"tools"`
	Dim   int `json:"dim"`
	// LossKind is LossSoftmax, LossSoftmaxNorm or LossBCE.
	LossKind string `json:"loss"`
	// SlotPositions is SlotPosNone or SlotPosLearned.
	SlotPositions string `json:"slot_positions"`
	// Candidates is the first stage whose top-N the refiner re-orders, and Vectors the
	// bi-encoder run whose Tool2Vec vectors fill the slots (both recorded for loading).
	Candidates candidates.Source `json:"candidates"`
	Vectors    string            `json:"vectors"`
	// FirstStageWeight w mixes the first stage back in when ranking: the top N are ordered by
	// (1−w)·z(refiner logits) + w·z(first-stage scores), z standardising over the N
	// candidates of a query. 0 is the refiner alone; train refiner chooses w on dev.
	FirstStageWeight float64 `json:"first_stage_weight,omitempty"`
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Encoder == nil {
		return fmt.Errorf("refiner: no encoder config")
	}
	if err := c.Encoder.Validate(); err != nil {
		return err
	}
	if c.MaxLen < 2 || c.MaxLen > c.Encoder.MaxPositions() {
		return fmt.Errorf("refiner: max length %d must be in [2, %d]", c.MaxLen, c.Encoder.MaxPositions())
	}
	if c.N < 1 {
		return fmt.Errorf("refiner: n %d must be positive", c.N)
	}
	if c.Tools < 1 || c.Dim < 1 {
		return fmt.Errorf("refiner: tool vectors [%d, %d] must be non-empty", c.Tools, c.Dim)
	}
	if !slices.Contains([]string{LossSoftmax, LossSoftmaxNorm, LossBCE}, c.LossKind) {
		return fmt.Errorf("refiner: loss %q: want softmax, softmax-norm or bce", c.LossKind)
	}
	if c.FirstStageWeight < 0 || c.FirstStageWeight > 1 || math.IsNaN(c.FirstStageWeight) {
		return fmt.Errorf("refiner: first-stage weight %v must be in [0, 1]", c.FirstStageWeight)
	}
	if c.SlotPositions != SlotPosNone && c.SlotPositions != SlotPosLearned {
		return fmt.Errorf("refiner: slot positions %q: want none or learned", c.SlotPositions)
	}
	return c.Candidates.Check()
}

// Marshal returns the JSON form stored in runs and checkpoints.
func (c *Config) Marshal() []byte { return encoder.MarshalConfig(c) }

// UnmarshalJSON reads the "encoder" object through the encoder registry.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	enc, err := encoder.UnmarshalModel(b, (*plain)(c))
	c.Encoder = enc
	return err
}

// Unmarshal parses a stored configuration.
func Unmarshal(b []byte) (*Config, error) {
	return encoder.UnmarshalConfig[Config](b, "refiner config")
}

// SetVectors creates (or replaces) the non-trainable tool-vector table in store:
// vecs [Tools][Dim].
func (c *Config) SetVectors(store *model.Store, vecs [][]float32) error {
	if len(vecs) != c.Tools {
		return fmt.Errorf("refiner: %d tool vectors, config has %d tools", len(vecs), c.Tools)
	}
	flat := make([]float32, 0, c.Tools*c.Dim)
	for i, v := range vecs {
		if len(v) != c.Dim {
			return fmt.Errorf("refiner: tool vector %d has %d dims, want %d", i, len(v), c.Dim)
		}
		flat = append(flat, v...)
	}
	s := store.RootScope().In("tool_vectors")
	if v := s.GetVariable("weight"); v != nil {
		if err := v.SetValue(tensors.FromFlatDataAndDimensions(flat, c.Tools, c.Dim)); err != nil {
			return err
		}
		v.SetTrainable(false)
		return nil
	}
	v, err := s.CreateVariable("weight", tensors.FromFlatDataAndDimensions(flat, c.Tools, c.Dim))
	if err != nil {
		return err
	}
	v.SetTrainable(false)
	return nil
}

func (c *Config) dense(s *model.Scope, x *Node, out int) *Node {
	g := x.Graph()
	in := x.Shape().Dimensions[x.Rank()-1]
	w := s.WithInitializer(initializer.RandomNormalFn(s, c.Encoder.InitRange())).
		VariableWithShape("weight", shapes.Make(x.DType(), out, in)).NodeValue(g)
	b := s.WithInitializer(initializer.Zero).VariableWithShape("bias", shapes.Make(x.DType(), out)).NodeValue(g)
	return nn.Dense(x, w, b, compute.DenseLayoutOutputsInput)
}

// HeadVars are the path prefixes of the variables the refiner adds to its encoder (the slot
// projection, learned slot positions and scorer; the tool vectors are fixed): what -head-lr
// trains at its own rate.
var HeadVars = []string{"/slot_proj/", "/slot_positions/", "/scorer/"}

// Logits scores candidate slots: ids and mask [B, S] are the query tokens, cand [B, N']
// (N' <= N) the candidates' tool indices and slots [B, N'] 1 for a real slot and 0 for
// padding. It returns logits [B, N'] (padded slots get a logit too: callers mask them).
func (c *Config) Logits(root *model.Scope, ids, mask, cand, slots *Node) *Node {
	g := ids.Graph()
	seq, n := ids.Shape().Dim(1), cand.Shape().Dim(1)
	x := c.Encoder.Embed(root, ids, nil, mask) // [B, S, H]
	dt := x.DType()
	table := root.In("tool_vectors").WithInitializer(initializer.Zero).
		VariableWithShape("weight", shapes.Make(dtypes.Float32, c.Tools, c.Dim))
	table.SetTrainable(false)
	vecs := ConvertDType(Gather(table.NodeValue(g), InsertAxes(ConvertDType(cand, dtypes.Int32), -1)), dt) // [B, N', D]
	s := c.dense(root.In("slot_proj"), vecs, c.Encoder.Hidden())                                           // [B, N', H]
	if c.SlotPositions == SlotPosLearned {
		p := root.In("slot_positions")
		pos := p.WithInitializer(initializer.RandomNormalFn(p, c.Encoder.InitRange())).
			VariableWithShape("weight", shapes.Make(dt, c.N, c.Encoder.Hidden())).NodeValue(g)
		s = Add(s, InsertAxes(Slice(pos, AxisRange(0, n)), 0))
	}
	real := ConvertDType(slots, dt)
	s = Mul(s, InsertAxes(real, -1))
	if p := c.Encoder.Dropout(); p > 0 && root.IsTraining(g) {
		s = layers.Dropout(root, s, Scalar(g, dt, p))
	}
	// Compact layout: row b is its L_b query tokens, then its n slots, then padding, so that
	// what a slot sees (relative positions in DeBERTa) does not depend on how far the batch
	// pads its queries. mask must be a prefix mask (real tokens first), as tokenize.Pad makes.
	batch, total := x.Shape().Dim(0), seq+n
	hidden := c.Encoder.Hidden()
	l := ReduceSum(ConvertDType(mask, dtypes.Int32), -1)                              // [B]
	lb := BroadcastToDims(InsertAxes(l, -1), batch, total)                            // [B, T]
	p := Iota(g, shapes.Make(dtypes.Int32, batch, total), 1)                          // [B, T]
	inQuery := LessThan(p, lb)                                                        // real query token
	inSlot := LogicalAnd(LogicalNot(inQuery), LessThan(p, AddScalar(lb, float64(n)))) // slot p - L_b
	src := Where(inQuery, p, Where(inSlot, AddScalar(Sub(p, lb), float64(seq)), ZerosLike(p)))
	rowBase := MulScalar(Iota(g, shapes.Make(dtypes.Int32, batch, total), 0), float64(total))
	flatIdx := InsertAxes(Reshape(Add(src, rowBase), batch*total), -1)
	seqIn := Reshape(Gather(Reshape(Concatenate([]*Node{x, s}, 1), batch*total, hidden), flatIdx), batch, total, hidden)
	keep := Reshape(Gather(Reshape(Concatenate([]*Node{ConvertDType(mask, dt), real}, 1), batch*total, 1), flatIdx), batch, total)
	keep = Mul(keep, ConvertDType(LogicalOr(inQuery, inSlot), dt))
	h := c.Encoder.EncodeEmbedded(root, seqIn, keep) // [B, T, H]
	// Slot j of row b sits at L_b + j.
	j := Iota(g, shapes.Make(dtypes.Int32, batch, n), 1)
	outIdx := Add(Add(j, BroadcastToDims(InsertAxes(l, -1), batch, n)), MulScalar(Iota(g, shapes.Make(dtypes.Int32, batch, n), 0), float64(total)))
	out := Reshape(Gather(Reshape(h, batch*total, hidden), InsertAxes(Reshape(outIdx, batch*n), -1)), batch, n, hidden)
	return Squeeze(c.dense(root.In("scorer"), out, 1), -1)
}

// Loss is the training loss of a batch: inputs ids, mask [B, S], cand, slots, labels [B, N]
// (labels 1 for a relevant candidate).
func (c *Config) Loss(root *model.Scope, in []*Node) *Node {
	logits := c.Logits(root, in[0], in[1], in[2], in[3])
	return c.loss(logits, in[4], in[3])
}

func (c *Config) loss(logits, labels, slots *Node) *Node {
	switch c.LossKind {
	case LossBCE:
		return losses.BCEWithLogits(logits, labels, slots)
	case LossSoftmaxNorm:
		return losses.MultiPositiveCE(logits, labels, slots, true)
	default:
		return losses.MultiPositiveCE(logits, labels, slots, false)
	}
}
