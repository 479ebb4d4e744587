package encoder

import (
	"encoding/json"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
	"github.com/toolret/toolret/models/mpnet"
)

// The "mpnet" registration: models/mpnet (all-mpnet-base-v2 and other MPNet checkpoints)
// behind Config. New starts from microsoft/mpnet-base (12 layers, hidden 768, 32 relative
// buckets, pad id 1) with the given sizes; Sizes.MaxPositions counts tokens, so the position
// table gets pad_token_id + 1 more rows, as MPNet numbers positions after the padding id.
// MPNet has no token types (TypeVocab 0: Encode ignores types). Its pooler is dense + tanh
// over the first token, as BERT's. It implements ONNX (mpnet.ONNX, mpnet.ONNXPooler).
func init() {
	Register(mpnet.ModelType, Type{
		New: func(s Sizes) (Config, error) {
			c := mpnet.Default()
			s.apply(&c.Config)
			if s.MaxPositions != 0 {
				c.MaxPositionEmbeddings = s.MaxPositions + c.PadTokenID + 1
			}
			return mpnetConfig{c}, nil
		},
		Unmarshal: func(b []byte) (Config, error) {
			c := mpnet.Default()
			if err := json.Unmarshal(b, c); err != nil {
				return nil, err
			}
			return mpnetConfig{c}, nil
		},
		LoadHF: func(scope *model.Scope, dir string) (Config, error) {
			c, err := mpnet.LoadHF(scope, dir)
			if err != nil {
				return nil, err
			}
			return mpnetConfig{c}, nil
		},
	})
}

// mpnetConfig is a *mpnet.Config as a Config. The pointer is never modified: the With
// methods copy.
type mpnetConfig struct{ c *mpnet.Config }

func (m mpnetConfig) ModelType() string  { return mpnet.ModelType }
func (m mpnetConfig) Validate() error    { return m.c.Validate() }
func (m mpnetConfig) Hidden() int        { return m.c.HiddenSize }
func (m mpnetConfig) Layers() int        { return m.c.NumHiddenLayers }
func (m mpnetConfig) MaxPositions() int  { return m.c.MaxTokens() }
func (m mpnetConfig) Vocab() int         { return m.c.VocabSize }
func (m mpnetConfig) TypeVocab() int     { return 0 }
func (m mpnetConfig) Dropout() float64   { return m.c.HiddenDropoutProb }
func (m mpnetConfig) InitRange() float64 { return m.c.InitializerRange }
func (m mpnetConfig) HasPooler() bool    { return m.c.HasPooler() }
func (m mpnetConfig) HF() HFNames {
	return HFNames{mpnet.Prefix, "MPNetModel", "MPNetForSequenceClassification"}
}
func (m mpnetConfig) copy() *mpnet.Config { c := *m.c; return &c }

func (m mpnetConfig) Params() []Param { return mpnet.Params(m.c) }

func (m mpnetConfig) WithPooler(has bool) Config {
	c := m.copy()
	c.Pooler = &has
	return mpnetConfig{c}
}

func (m mpnetConfig) WithDType(dt dtypes.DType) Config {
	c := m.copy()
	c.DType = dt
	return mpnetConfig{c}
}

func (m mpnetConfig) Encode(scope *model.Scope, ids, types, mask *Node) *Node {
	return mpnet.Encode(scope, m.c, ids, mask)
}

func (m mpnetConfig) Embed(scope *model.Scope, ids, types, mask *Node) *Node {
	return mpnet.Embed(scope, m.c, ids)
}

func (m mpnetConfig) EncodeEmbedded(scope *model.Scope, x, mask *Node) *Node {
	return mpnet.Layers(scope, m.c, x, mask)
}

func (m mpnetConfig) Pool(scope *model.Scope, hidden, mask *Node, p Pooling) *Node {
	return mpnet.Pool(scope, m.c, hidden, mask, p)
}

func (m mpnetConfig) Init(scope *model.Scope, seed uint64) error { return mpnet.Init(scope, m.c, seed) }

func (m mpnetConfig) SaveHF(scope *model.Scope, dir string, prefix bool) error {
	return mpnet.SaveHF(scope, m.c, dir, prefix)
}

func (m mpnetConfig) ONNX(g *onnxgraph.Builder, param func(name string) []float32, ids, types, mask string) string {
	return mpnet.ONNX(g, m.c, param, ids, types, mask)
}

func (m mpnetConfig) ONNXPooler(g *onnxgraph.Builder, param func(name string) []float32, cls string) string {
	return mpnet.ONNXPooler(g, m.c, param, cls)
}

func (m mpnetConfig) MarshalJSON() ([]byte, error) {
	c := m.copy()
	c.ModelType = mpnet.ModelType
	return json.Marshal(c)
}
