package encoder

import (
	"encoding/json"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/bert"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
)

// The "bert" registration: models/bert behind Config.
func init() {
	Register("bert", Type{
		New: func(s Sizes) (Config, error) {
			c := bert.Default()
			s.apply(&c.Config)
			if s.MaxPositions != 0 {
				c.MaxPositionEmbeddings = s.MaxPositions
			}
			return bertConfig{c}, nil
		},
		Unmarshal: func(b []byte) (Config, error) {
			var c bert.Config
			if err := json.Unmarshal(b, &c); err != nil {
				return nil, err
			}
			return bertConfig{&c}, nil
		},
		LoadHF: func(scope *model.Scope, dir string) (Config, error) {
			c, err := bert.LoadHF(scope, dir)
			if err != nil {
				return nil, err
			}
			return bertConfig{c}, nil
		},
	})
}

// bertConfig is a *bert.Config as a Config (and as an ONNX encoder). The pointer is never
// modified: the With methods copy.
type bertConfig struct{ c *bert.Config }

func (b bertConfig) ModelType() string  { return "bert" }
func (b bertConfig) Validate() error    { return b.c.Validate() }
func (b bertConfig) Hidden() int        { return b.c.HiddenSize }
func (b bertConfig) Layers() int        { return b.c.NumHiddenLayers }
func (b bertConfig) MaxPositions() int  { return b.c.MaxPositionEmbeddings }
func (b bertConfig) Vocab() int         { return b.c.VocabSize }
func (b bertConfig) TypeVocab() int     { return b.c.TypeVocabSize }
func (b bertConfig) Dropout() float64   { return b.c.HiddenDropoutProb }
func (b bertConfig) InitRange() float64 { return b.c.InitializerRange }
func (b bertConfig) HasPooler() bool    { return b.c.HasPooler() }
func (b bertConfig) Params() []Param    { return bert.Params(b.c) }
func (b bertConfig) HF() HFNames {
	return HFNames{"bert", "BertModel", "BertForSequenceClassification"}
}
func (b bertConfig) copy() *bert.Config { c := *b.c; return &c }

func (b bertConfig) WithPooler(has bool) Config {
	c := b.copy()
	c.Pooler = &has
	return bertConfig{c}
}

func (b bertConfig) WithDType(dt dtypes.DType) Config {
	c := b.copy()
	c.DType = dt
	return bertConfig{c}
}

func (b bertConfig) Encode(scope *model.Scope, ids, types, mask *Node) *Node {
	return bert.Encode(scope, b.c, ids, types, mask)
}

func (b bertConfig) Embed(scope *model.Scope, ids, types, _ *Node) *Node {
	return bert.Embed(scope, b.c, ids, types)
}

func (b bertConfig) EncodeEmbedded(scope *model.Scope, x, mask *Node) *Node {
	return bert.Layers(scope, b.c, x, mask)
}

func (b bertConfig) Pool(scope *model.Scope, hidden, mask *Node, p Pooling) *Node {
	return bert.Pool(scope, b.c, hidden, mask, p)
}

func (b bertConfig) Init(scope *model.Scope, seed uint64) error { return bert.Init(scope, b.c, seed) }

func (b bertConfig) SaveHF(scope *model.Scope, dir string, prefix bool) error {
	c := b.copy()
	c.ModelType = "bert"
	return bert.SaveHF(scope, c, dir, prefix)
}

func (b bertConfig) MarshalJSON() ([]byte, error) {
	c := b.copy()
	c.ModelType = "bert"
	return json.Marshal(c)
}

func (b bertConfig) ONNX(g *onnxgraph.Builder, param func(name string) []float32, ids, types, mask string) string {
	return bert.ONNX(g, b.c, param, ids, types, mask)
}

func (b bertConfig) ONNXPooler(g *onnxgraph.Builder, param func(name string) []float32, cls string) string {
	return bert.ONNXPooler(g, b.c, param, cls)
}
