package encoder

import (
	"encoding/json"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/deberta"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
)

// The "deberta-v2" registration: models/deberta (DeBERTa-v2 and v3) behind Config. New
// starts from deberta-v3-base (deberta.Default: relative attention, 256 position buckets,
// pos_att_type [p2c, c2p], share_att_key, rel LayerNorm, no absolute positions, no token
// types, layer_norm_eps 1e-7, GELU) with the given sizes; a model of fewer than 512
// positions gets max_positions/2 buckets.
//
// Its pooler layer is DeBERTa's ContextPooler, pooler_hidden_act (GELU) of a dense layer over
// [CLS], with the same parameter names as BERT's pooler ("pooler.dense.weight", "bias"):
// HasPooler reports whether the model has it and PoolPooler applies it, so classification
// heads over PoolPooler compute what DebertaV2ForSequenceClassification computes. It
// implements ONNX (deberta.ONNX, deberta.ONNXPooler), so export writes DeBERTa as ONNX files.
func init() {
	Register(deberta.ModelType, Type{
		New: func(s Sizes) (Config, error) {
			c := deberta.Default()
			s.apply(&c.Config)
			if s.MaxPositions != 0 {
				c.MaxPositionEmbeddings = s.MaxPositions
			}
			// v3 has 256 buckets for 512 positions: keep that ratio for shorter models (the
			// log buckets need more positions than half the buckets), no buckets below 4.
			if c.PositionBuckets = min(256, c.MaxPositionEmbeddings/2); c.PositionBuckets < 2 {
				c.PositionBuckets = -1
			}
			return debertaConfig{c}, nil
		},
		Unmarshal: func(b []byte) (Config, error) {
			var c deberta.Config
			if err := json.Unmarshal(b, &c); err != nil {
				return nil, err
			}
			return debertaConfig{&c}, nil
		},
		LoadHF: func(scope *model.Scope, dir string) (Config, error) {
			c, err := deberta.LoadHF(scope, dir)
			if err != nil {
				return nil, err
			}
			return debertaConfig{c}, nil
		},
	})
}

// debertaConfig is a *deberta.Config as a Config. The pointer is never modified: the With
// methods copy.
type debertaConfig struct{ c *deberta.Config }

func (d debertaConfig) ModelType() string  { return deberta.ModelType }
func (d debertaConfig) Validate() error    { return d.c.Validate() }
func (d debertaConfig) Hidden() int        { return d.c.HiddenSize }
func (d debertaConfig) Layers() int        { return d.c.NumHiddenLayers }
func (d debertaConfig) MaxPositions() int  { return d.c.MaxPositionEmbeddings }
func (d debertaConfig) Vocab() int         { return d.c.VocabSize }
func (d debertaConfig) TypeVocab() int     { return d.c.TypeVocabSize }
func (d debertaConfig) Dropout() float64   { return d.c.HiddenDropoutProb }
func (d debertaConfig) InitRange() float64 { return d.c.InitializerRange }
func (d debertaConfig) HasPooler() bool    { return d.c.HasPooler() }
func (d debertaConfig) HF() HFNames {
	return HFNames{deberta.Prefix, "DebertaV2Model", "DebertaV2ForSequenceClassification"}
}
func (d debertaConfig) copy() *deberta.Config { c := *d.c; return &c }

func (d debertaConfig) Params() []Param { return deberta.Params(d.c) }

func (d debertaConfig) WithPooler(has bool) Config {
	c := d.copy()
	c.Pooler = &has
	return debertaConfig{c}
}

func (d debertaConfig) WithDType(dt dtypes.DType) Config {
	c := d.copy()
	c.DType = dt
	return debertaConfig{c}
}

func (d debertaConfig) Encode(scope *model.Scope, ids, types, mask *Node) *Node {
	return deberta.Encode(scope, d.c, ids, types, mask)
}

func (d debertaConfig) Embed(scope *model.Scope, ids, types, mask *Node) *Node {
	return deberta.Embed(scope, d.c, ids, types, mask)
}

func (d debertaConfig) EncodeEmbedded(scope *model.Scope, x, mask *Node) *Node {
	return deberta.Layers(scope, d.c, x, mask)
}

func (d debertaConfig) Pool(scope *model.Scope, hidden, mask *Node, p Pooling) *Node {
	return deberta.Pool(scope, d.c, hidden, mask, p)
}

func (d debertaConfig) Init(scope *model.Scope, seed uint64) error {
	return deberta.Init(scope, d.c, seed)
}

func (d debertaConfig) SaveHF(scope *model.Scope, dir string, prefix bool) error {
	return deberta.SaveHF(scope, d.c, dir, prefix)
}

func (d debertaConfig) ONNX(g *onnxgraph.Builder, param func(name string) []float32, ids, types, mask string) string {
	return deberta.ONNX(g, d.c, param, ids, types, mask)
}

func (d debertaConfig) ONNXPooler(g *onnxgraph.Builder, param func(name string) []float32, cls string) string {
	return deberta.ONNXPooler(g, d.c, param, cls)
}

func (d debertaConfig) MarshalJSON() ([]byte, error) {
	c := d.copy()
	c.ModelType = deberta.ModelType
	return json.Marshal(c)
}
