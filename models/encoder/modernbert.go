package encoder

import (
	"encoding/json"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
	"github.com/toolret/toolret/models/modernbert"
)

// The "modernbert" registration: models/modernbert (ModernBERT-*, modernbert-embed,
// gte-modernbert) behind Config. New starts from ModernBERT-base (22 layers, hidden 768,
// global attention every third layer, a local window of 128) with the given sizes
// (intermediate_size 1.5 x hidden unless given, as ModernBERT's GeGLU halves its Wi output);
// Sizes.MaxPositions sets max_position_embeddings (rotary positions: no table). ModernBERT has
// no token types (TypeVocab 0, as MPNet): Encode ignores types, and a pair's texts are told
// apart by [SEP] alone. It has no pooler layer: pool with cls (gte-modernbert) or mean
// (modernbert-embed); WithPooler(true) makes a configuration Validate refuses. It implements
// ONNX (modernbert.ONNX: RoPE tables and the local window built in the graph).
func init() {
	Register(modernbert.ModelType, Type{
		New: func(s Sizes) (Config, error) {
			c := modernbert.Default()
			s.applyShape(&c.VocabSize, &c.HiddenSize, &c.NumHiddenLayers, &c.NumAttentionHeads)
			c.IntermediateSize = c.HiddenSize * 3 / 2
			setNonZero(&c.IntermediateSize, s.Intermediate)
			setNonZero(&c.MaxPositionEmbeddings, s.MaxPositions)
			if c.PadTokenID >= c.VocabSize {
				c.PadTokenID = 0
			}
			return mbertConfig{c}, nil
		},
		Unmarshal: func(b []byte) (Config, error) {
			c := modernbert.Default()
			if err := json.Unmarshal(b, c); err != nil {
				return nil, err
			}
			return mbertConfig{c}, nil
		},
		LoadHF: func(scope *model.Scope, dir string) (Config, error) {
			c, err := modernbert.LoadHF(scope, dir)
			if err != nil {
				return nil, err
			}
			return mbertConfig{c}, nil
		},
	})
}

// mbertConfig is a *modernbert.Config as a Config. The pointer is never modified: the With
// methods copy.
type mbertConfig struct{ c *modernbert.Config }

func (m mbertConfig) ModelType() string  { return modernbert.ModelType }
func (m mbertConfig) Validate() error    { return m.c.Validate() }
func (m mbertConfig) Hidden() int        { return m.c.HiddenSize }
func (m mbertConfig) Layers() int        { return m.c.NumHiddenLayers }
func (m mbertConfig) MaxPositions() int  { return m.c.MaxPositionEmbeddings }
func (m mbertConfig) Vocab() int         { return m.c.VocabSize }
func (m mbertConfig) TypeVocab() int     { return 0 }
func (m mbertConfig) Dropout() float64   { return m.c.MLPDropout }
func (m mbertConfig) InitRange() float64 { return m.c.InitializerRange }
func (m mbertConfig) HasPooler() bool    { return false }
func (m mbertConfig) Params() []Param    { return modernbert.Params(m.c) }
func (m mbertConfig) HF() HFNames {
	return HFNames{modernbert.Prefix, "ModernBertModel", "ModernBertForSequenceClassification"}
}
func (m mbertConfig) copy() *modernbert.Config { c := *m.c; return &c }

func (m mbertConfig) WithPooler(has bool) Config {
	c := m.copy()
	c.Pooler = has
	return mbertConfig{c}
}

func (m mbertConfig) WithDType(dt dtypes.DType) Config {
	c := m.copy()
	c.DType = dt
	return mbertConfig{c}
}

func (m mbertConfig) Encode(scope *model.Scope, ids, types, mask *Node) *Node {
	return modernbert.Encode(scope, m.c, ids, mask)
}

func (m mbertConfig) Embed(scope *model.Scope, ids, types, mask *Node) *Node {
	return modernbert.Embed(scope, m.c, ids)
}

func (m mbertConfig) EncodeEmbedded(scope *model.Scope, h, mask *Node) *Node {
	return modernbert.Layers(scope, m.c, h, mask)
}

func (m mbertConfig) Pool(scope *model.Scope, hidden, mask *Node, p Pooling) *Node {
	return modernbert.Pool(hidden, mask, p)
}

func (m mbertConfig) Init(scope *model.Scope, seed uint64) error {
	return modernbert.Init(scope, m.c, seed)
}

func (m mbertConfig) SaveHF(scope *model.Scope, dir string, prefix bool) error {
	return modernbert.SaveHF(scope, m.c, dir, prefix)
}

func (m mbertConfig) MarshalJSON() ([]byte, error) {
	c := m.copy()
	c.ModelType = modernbert.ModelType
	return c.MarshalJSON()
}

func (m mbertConfig) ONNX(g *onnxgraph.Builder, param func(name string) []float32, ids, types, mask string) string {
	return modernbert.ONNX(g, m.c, param, ids, types, mask)
}

func (m mbertConfig) ONNXPooler(g *onnxgraph.Builder, param func(name string) []float32, cls string) string {
	return modernbert.ONNXPooler(g, m.c, param, cls)
}
