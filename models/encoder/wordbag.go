package encoder

import (
	"encoding/json"
	"math"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
	"github.com/toolret/toolret/models/wordbag"
)

// The "wordbag" registration: models/wordbag (weighted bag of word vectors, no layers) behind
// Config. New takes Sizes.Vocab, Hidden (default 768) and MaxPositions; layers, heads and
// intermediate sizes do not apply. It writes ONNX (wordbag.ONNX). Its HF layout (config.json
// with model_type "wordbag", model.safetensors) is toolret's own: HF transformers has no such
// architecture.
func init() {
	Register(wordbag.ModelType, Type{
		New: func(s Sizes) (Config, error) {
			c := wordbag.Default(s.Vocab)
			if s.Hidden != 0 {
				c.HiddenSize, c.InitializerRange = s.Hidden, 1/math.Sqrt(float64(s.Hidden))
			}
			if s.MaxPositions != 0 {
				c.MaxPositionEmbeddings = s.MaxPositions
			}
			return wordbagConfig{c}, nil
		},
		Unmarshal: func(b []byte) (Config, error) {
			var c wordbag.Config
			if err := json.Unmarshal(b, &c); err != nil {
				return nil, err
			}
			return wordbagConfig{&c}, nil
		},
		LoadHF: func(scope *model.Scope, dir string) (Config, error) {
			c, err := wordbag.LoadHF(scope, dir)
			if err != nil {
				return nil, err
			}
			return wordbagConfig{c}, nil
		},
	})
}

// IDFInit is implemented by encoders whose new weights start from the tool corpus's inverse
// document frequencies (df[i]: how many of n tool texts hold token id i); training from
// scratch calls it.
type IDFInit interface {
	WithIDF(df []int, n int) Config
}

// wordbagConfig is a *wordbag.Config as a Config; the With methods copy.
type wordbagConfig struct{ c *wordbag.Config }

func (w wordbagConfig) ModelType() string  { return wordbag.ModelType }
func (w wordbagConfig) Validate() error    { return w.c.Validate() }
func (w wordbagConfig) Hidden() int        { return w.c.HiddenSize }
func (w wordbagConfig) Layers() int        { return 0 }
func (w wordbagConfig) MaxPositions() int  { return w.c.MaxPositionEmbeddings }
func (w wordbagConfig) Vocab() int         { return w.c.VocabSize }
func (w wordbagConfig) TypeVocab() int     { return w.c.TypeVocabSize }
func (w wordbagConfig) Dropout() float64   { return 0 }
func (w wordbagConfig) InitRange() float64 { return w.c.InitializerRange }
func (w wordbagConfig) HasPooler() bool    { return w.c.Pooler }
func (w wordbagConfig) HF() HFNames        { return HFNames{wordbag.Prefix, "WordBagModel", ""} }
func (w wordbagConfig) copy() *wordbag.Config {
	c := *w.c
	return &c
}

func (w wordbagConfig) Params() []Param { return wordbag.Params(w.c) }

func (w wordbagConfig) WithPooler(has bool) Config {
	c := w.copy()
	c.Pooler = has
	return wordbagConfig{c}
}

func (w wordbagConfig) WithDType(dt dtypes.DType) Config {
	c := w.copy()
	c.DType = dt
	return wordbagConfig{c}
}

// WithIDF returns a copy whose new word weights are the idf of df over n tool texts.
func (w wordbagConfig) WithIDF(df []int, n int) Config {
	c := w.copy()
	c.IDF = wordbag.IDF(df, n)
	return wordbagConfig{c}
}

func (w wordbagConfig) Encode(scope *model.Scope, ids, _, mask *Node) *Node {
	return wordbag.Encode(scope, w.c, ids, mask)
}

func (w wordbagConfig) Embed(scope *model.Scope, ids, _, mask *Node) *Node {
	return wordbag.Encode(scope, w.c, ids, mask)
}

func (w wordbagConfig) EncodeEmbedded(_ *model.Scope, x, mask *Node) *Node {
	return wordbag.EncodeEmbedded(x, mask)
}

func (w wordbagConfig) Pool(_ *model.Scope, hidden, mask *Node, p Pooling) *Node {
	return wordbag.Pool(hidden, mask, p)
}

func (w wordbagConfig) Init(scope *model.Scope, seed uint64) error {
	return wordbag.Init(scope, w.c, seed)
}

func (w wordbagConfig) SaveHF(scope *model.Scope, dir string, prefix bool) error {
	return wordbag.SaveHF(scope, w.c, dir, prefix)
}

func (w wordbagConfig) MarshalJSON() ([]byte, error) {
	c := w.copy()
	c.ModelType = wordbag.ModelType
	return json.Marshal(c)
}

func (w wordbagConfig) ONNX(g *onnxgraph.Builder, param func(name string) []float32, ids, _, mask string) string {
	return wordbag.ONNX(g, w.c, param, ids, mask)
}

func (w wordbagConfig) ONNXPooler(*onnxgraph.Builder, func(string) []float32, string) string {
	panic("wordbag: no pooler layer") // Validate refuses a word bag with a pooler
}
