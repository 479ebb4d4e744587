package encoder

import (
	"encoding/json"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
	"github.com/toolret/toolret/models/xlmroberta"
)

// The "xlm-roberta" registration: models/xlmroberta (xlm-roberta-*, multilingual-e5-*, bge-m3)
// behind Config. New starts from xlm-roberta-base (12 layers, hidden 768, pad id 1, one token
// type) with the given sizes; Sizes.MaxPositions counts tokens, so the position table gets
// pad_token_id + 1 more rows, as RoBERTa numbers positions after the padding id. With one
// token type, Encode ignores types (a pair's second text is type 0 too, as HF's XLM-RoBERTa
// tokenizer makes it). Its pooler is BERT's dense + tanh. It implements ONNX.
func init() {
	Register(xlmroberta.ModelType, Type{
		New: func(s Sizes) (Config, error) {
			c := xlmroberta.Default()
			s.apply(&c.Config.Config)
			if s.MaxPositions != 0 {
				c.MaxPositionEmbeddings = s.MaxPositions + c.PadTokenID + 1
			}
			return xlmrConfig{c}, nil
		},
		Unmarshal: func(b []byte) (Config, error) {
			c := xlmroberta.Default()
			if err := json.Unmarshal(b, c); err != nil {
				return nil, err
			}
			return xlmrConfig{c}, nil
		},
		LoadHF: func(scope *model.Scope, dir string) (Config, error) {
			c, err := xlmroberta.LoadHF(scope, dir)
			if err != nil {
				return nil, err
			}
			return xlmrConfig{c}, nil
		},
	})
}

// xlmrConfig is a *xlmroberta.Config as a Config. The pointer is never modified: the With
// methods copy.
type xlmrConfig struct{ c *xlmroberta.Config }

func (x xlmrConfig) ModelType() string  { return xlmroberta.ModelType }
func (x xlmrConfig) Validate() error    { return x.c.Validate() }
func (x xlmrConfig) Hidden() int        { return x.c.HiddenSize }
func (x xlmrConfig) Layers() int        { return x.c.NumHiddenLayers }
func (x xlmrConfig) MaxPositions() int  { return x.c.MaxTokens() }
func (x xlmrConfig) Vocab() int         { return x.c.VocabSize }
func (x xlmrConfig) TypeVocab() int     { return x.c.TypeVocabSize }
func (x xlmrConfig) Dropout() float64   { return x.c.HiddenDropoutProb }
func (x xlmrConfig) InitRange() float64 { return x.c.InitializerRange }
func (x xlmrConfig) HasPooler() bool    { return x.c.HasPooler() }
func (x xlmrConfig) Params() []Param    { return xlmroberta.Params(x.c) }
func (x xlmrConfig) HF() HFNames {
	return HFNames{xlmroberta.Prefix, "XLMRobertaModel", "XLMRobertaForSequenceClassification"}
}
func (x xlmrConfig) copy() *xlmroberta.Config { c := *x.c; return &c }

// PairsWithOneType: with type_vocab_size 1 every token is type 0 (see PairsWithOneType).
func (x xlmrConfig) PairsWithOneType() bool { return x.c.TypeVocabSize == 1 }

func (x xlmrConfig) WithPooler(has bool) Config {
	c := x.copy()
	c.Pooler = &has
	return xlmrConfig{c}
}

func (x xlmrConfig) WithDType(dt dtypes.DType) Config {
	c := x.copy()
	c.DType = dt
	return xlmrConfig{c}
}

func (x xlmrConfig) Encode(scope *model.Scope, ids, types, mask *Node) *Node {
	return xlmroberta.Encode(scope, x.c, ids, types, mask)
}

func (x xlmrConfig) Embed(scope *model.Scope, ids, types, mask *Node) *Node {
	return xlmroberta.Embed(scope, x.c, ids, types, mask)
}

func (x xlmrConfig) EncodeEmbedded(scope *model.Scope, h, mask *Node) *Node {
	return xlmroberta.Layers(scope, x.c, h, mask)
}

func (x xlmrConfig) Pool(scope *model.Scope, hidden, mask *Node, p Pooling) *Node {
	return xlmroberta.Pool(scope, x.c, hidden, mask, p)
}

func (x xlmrConfig) Init(scope *model.Scope, seed uint64) error {
	return xlmroberta.Init(scope, x.c, seed)
}

func (x xlmrConfig) SaveHF(scope *model.Scope, dir string, prefix bool) error {
	return xlmroberta.SaveHF(scope, x.c, dir, prefix)
}

func (x xlmrConfig) ONNX(g *onnxgraph.Builder, param func(name string) []float32, ids, types, mask string) string {
	return xlmroberta.ONNX(g, x.c, param, ids, types, mask)
}

func (x xlmrConfig) ONNXPooler(g *onnxgraph.Builder, param func(name string) []float32, cls string) string {
	return xlmroberta.ONNXPooler(g, x.c, param, cls)
}

func (x xlmrConfig) MarshalJSON() ([]byte, error) {
	c := x.copy()
	c.ModelType = xlmroberta.ModelType
	return json.Marshal(c)
}
