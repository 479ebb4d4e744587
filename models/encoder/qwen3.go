package encoder

import (
	"encoding/json"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/qwen3"
)

// The "qwen3" registration: models/qwen3 (Qwen3-Embedding) behind Config. New starts from
// Qwen3-Embedding-0.6B with the given sizes (given a hidden size or heads, head_dim becomes
// hidden / heads and every head has its own key-value head). Qwen3 has no token types
// (TypeVocab 1, types ignored: a pair is told apart by its tokens, PairsWithOneType) and no
// pooler layer; Qwen3-Embedding pools the last token (PoolLast, its sentence-transformers
// Pooling module's "lasttoken") and normalises. No ONNX graph yet: it does not implement
// ONNX, so export -format onnx refuses it and -format hf notes the missing model.onnx.
func init() {
	Register(qwen3.ModelType, Type{
		New: func(s Sizes) (Config, error) {
			c := qwen3.Default()
			s.applyShape(&c.VocabSize, &c.HiddenSize, &c.NumHiddenLayers, &c.NumAttentionHeads)
			if s.Hidden != 0 || s.Heads != 0 {
				c.HeadDim = c.HiddenSize / c.NumAttentionHeads
				c.NumKeyValueHeads = c.NumAttentionHeads
				c.IntermediateSize = 3 * c.HiddenSize
			}
			setNonZero(&c.IntermediateSize, s.Intermediate)
			setNonZero(&c.MaxPositionEmbeddings, s.MaxPositions)
			return qwen3Config{c}, nil
		},
		Unmarshal: func(b []byte) (Config, error) {
			c := qwen3.Default()
			c.RopeParameters, c.LayerTypes = nil, nil
			if err := json.Unmarshal(b, c); err != nil {
				return nil, err
			}
			return qwen3Config{c}, nil
		},
		LoadHF: func(scope *model.Scope, dir string) (Config, error) {
			c, err := qwen3.LoadHF(scope, dir)
			if err != nil {
				return nil, err
			}
			return qwen3Config{c}, nil
		},
	})
}

// qwen3Config is a *qwen3.Config as a Config. The pointer is never modified: the With methods
// copy.
type qwen3Config struct{ c *qwen3.Config }

func (x qwen3Config) ModelType() string  { return qwen3.ModelType }
func (x qwen3Config) Validate() error    { return x.c.Validate() }
func (x qwen3Config) Hidden() int        { return x.c.HiddenSize }
func (x qwen3Config) Layers() int        { return x.c.NumHiddenLayers }
func (x qwen3Config) MaxPositions() int  { return x.c.MaxPositionEmbeddings }
func (x qwen3Config) Vocab() int         { return x.c.VocabSize }
func (x qwen3Config) TypeVocab() int     { return 1 }
func (x qwen3Config) Dropout() float64   { return 0 }
func (x qwen3Config) InitRange() float64 { return x.c.InitializerRange }
func (x qwen3Config) HasPooler() bool    { return false }
func (x qwen3Config) Params() []Param    { return qwen3.Params(x.c) }
func (x qwen3Config) HF() HFNames {
	return HFNames{qwen3.Prefix, "Qwen3Model", "Qwen3ForSequenceClassification"}
}

// PairsWithOneType: Qwen3 has no token types (see PairsWithOneType).
func (x qwen3Config) PairsWithOneType() bool { return true }

// Causal: Qwen3 attends causally (see Causal).
func (x qwen3Config) Causal() bool { return true }

// WithPooler returns x: Qwen3 has no pooler layer to add (PoolPooler is an error).
func (x qwen3Config) WithPooler(bool) Config { return x }

func (x qwen3Config) WithDType(dt dtypes.DType) Config {
	c := *x.c
	c.DType = dt
	return qwen3Config{&c}
}

func (x qwen3Config) Encode(scope *model.Scope, ids, types, mask *Node) *Node {
	return qwen3.Encode(scope, x.c, ids, types, mask)
}

func (x qwen3Config) Embed(scope *model.Scope, ids, types, mask *Node) *Node {
	return qwen3.Embed(scope, x.c, ids, types, mask)
}

func (x qwen3Config) EncodeEmbedded(scope *model.Scope, h, mask *Node) *Node {
	return qwen3.Layers(scope, x.c, h, mask)
}

func (x qwen3Config) Pool(_ *model.Scope, hidden, mask *Node, p Pooling) *Node {
	return qwen3.Pool(hidden, mask, p)
}

func (x qwen3Config) Init(scope *model.Scope, seed uint64) error {
	return qwen3.Init(scope, x.c, seed)
}

func (x qwen3Config) SaveHF(scope *model.Scope, dir string, prefix bool) error {
	return qwen3.SaveHF(scope, x.c, dir, prefix)
}

func (x qwen3Config) MarshalJSON() ([]byte, error) { return x.c.MarshalJSON() }
