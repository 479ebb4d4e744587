// Package wordbag is a bag-of-words encoder: every token is a learned vector scaled by a
// learned per-token weight, and a text is their (masked) mean; no positions, no layers. It is
// sentence-transformers' WordEmbeddings + WordWeights + Pooling(mean) over toolret's WordPiece
// tokens, with the weights initialised to the tokens' inverse document frequency over the tool
// corpus (WithIDF), so that before any training its cosine ranks as a randomly projected TF-IDF
// does. It is the dense model that carries lexical matching to tools never seen in training
// (README, "New tools"): wide vectors cost it no layers, and no LayerNorm erases the weights.
//
// Parameters (HF-style names): "embeddings.word_embeddings.weight" [vocab, hidden] and
// "embeddings.word_weights.weight" [vocab]. It has no token types (pair models need bert or
// deberta) and no pooler.
package wordbag

import (
	"errors"
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/toolret/toolret/models/hfweights"
	"github.com/toolret/toolret/models/pooling"
)

// ModelType is the config.json model_type of a word-bag encoder.
const ModelType = "wordbag"

// Parameter names.
const (
	Embeddings = "embeddings.word_embeddings.weight"
	Weights    = "embeddings.word_weights.weight"
)

// Config is a word-bag encoder's configuration (config.json fields).
type Config struct {
	ModelType             string  `json:"model_type"`
	VocabSize             int     `json:"vocab_size"`
	HiddenSize            int     `json:"hidden_size"`
	MaxPositionEmbeddings int     `json:"max_position_embeddings"` // the longest text it takes (no position parameters)
	TypeVocabSize         int     `json:"type_vocab_size"`         // always 0: no token types
	InitializerRange      float64 `json:"initializer_range"`       // std of the word vectors' normal init
	PadTokenID            int     `json:"pad_token_id"`

	// DType is the variables' and computation's dtype (zero value: Float32).
	DType dtypes.DType `json:"-"`
	// Pooler is always false; a request for one makes Validate fail.
	Pooler bool `json:"-"`
	// IDF, when set (WithIDF), initialises the word weights of a new model (else ones).
	IDF []float32 `json:"-"`
}

// Default returns a 768-wide word bag of vocab tokens, its vectors normal(0, 1/sqrt(768)).
func Default(vocab int) *Config {
	return &Config{ModelType: ModelType, VocabSize: vocab, HiddenSize: 768, MaxPositionEmbeddings: 512,
		InitializerRange: 1 / math.Sqrt(768)}
}

func (c *Config) dtype() dtypes.DType {
	if c.DType == dtypes.InvalidDType {
		return dtypes.Float32
	}
	return c.DType
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	switch {
	case c.ModelType != ModelType:
		return fmt.Errorf("wordbag config: model_type %q, want %q", c.ModelType, ModelType)
	case c.VocabSize <= 0 || c.HiddenSize <= 0 || c.MaxPositionEmbeddings <= 0:
		return fmt.Errorf("wordbag config: vocab_size %d, hidden_size %d, max_position_embeddings %d: must be > 0",
			c.VocabSize, c.HiddenSize, c.MaxPositionEmbeddings)
	case c.TypeVocabSize != 0:
		return fmt.Errorf("wordbag config: type_vocab_size %d: a bag of words has no token types (pair models need bert or deberta)", c.TypeVocabSize)
	case c.Pooler:
		return errors.New("wordbag config: a word bag has no pooler layer (use mean pooling)")
	case !(c.InitializerRange > 0): // NaN too
		return fmt.Errorf("wordbag config: initializer_range %v: must be > 0 (the word vectors' std)", c.InitializerRange)
	case c.PadTokenID < 0 || c.PadTokenID >= c.VocabSize:
		return fmt.Errorf("wordbag config: pad_token_id %d outside the vocabulary of %d", c.PadTokenID, c.VocabSize)
	case c.IDF != nil && len(c.IDF) != c.VocabSize:
		return fmt.Errorf("wordbag config: %d idf weights for a vocabulary of %d", len(c.IDF), c.VocabSize)
	}
	return nil
}

// LoadConfig reads and validates a config.json.
func LoadConfig(path string) (*Config, error) {
	return hfweights.LoadConfig(path, &Config{})
}

// Param is one parameter in HF naming.
type Param = hfweights.Param

// Params lists the parameters.
func Params(c *Config) []Param {
	return []Param{{Name: Embeddings, Shape: []int{c.VocabSize, c.HiddenSize}}, {Name: Weights, Shape: []int{c.VocabSize}}}
}

// IDF returns the inverse document frequency log((n+1)/(df+0.5)) of every token id, for df the
// number of the n documents (tool texts) each id occurs in: the word weights' initial values.
func IDF(df []int, n int) []float32 {
	out := make([]float32, len(df))
	for i, d := range df {
		out[i] = float32(math.Log((float64(n) + 1) / (float64(d) + 0.5)))
	}
	return out
}

// Encode returns the token states [batch, seq, hidden]: each real token's vector times its
// weight, zero at padding (mask 0).
func Encode(scope *model.Scope, c *Config, ids, mask *Node) *Node {
	g := ids.Graph()
	if seq := ids.Shape().Dimensions[1]; seq > c.MaxPositionEmbeddings {
		panic(fmt.Errorf("wordbag: sequence length %d exceeds max_position_embeddings %d", seq, c.MaxPositionEmbeddings))
	}
	emb := scope.At("embeddings")
	words := emb.In("word_embeddings").WithInitializer(initializer.RandomNormalFn(emb, c.InitializerRange)).
		VariableWithShape("weight", shapes.Make(c.dtype(), c.VocabSize, c.HiddenSize)).NodeValue(g)
	weights := emb.In("word_weights").WithInitializer(c.weightsInit()).
		VariableWithShape("weight", shapes.Make(c.dtype(), c.VocabSize)).NodeValue(g)
	idx := InsertAxes(ConvertDType(ids, dtypes.Int32), -1)
	x := Mul(Gather(words, idx), InsertAxes(Gather(weights, idx), -1)) // [B, S, H] * [B, S, 1]
	return EncodeEmbedded(x, mask)
}

// weightsInit initialises the word weights to c.IDF, or ones.
func (c *Config) weightsInit() model.VariableInitializer {
	if c.IDF == nil {
		return initializer.One
	}
	idf := c.IDF
	return func(g *Graph, shape shapes.Shape) *Node {
		return ConvertDType(Const(g, idf), shape.DType)
	}
}

// EncodeEmbedded zeroes the padding of embedded inputs x [batch, seq, hidden]: a word bag has
// no layers.
func EncodeEmbedded(x, mask *Node) *Node {
	return Mul(x, InsertAxes(ConvertDType(mask, x.DType()), -1))
}

// Pool reduces the token states with p: mean or none. A word bag has no pooler, and its
// [CLS] state is the same vector for every text, so cls is refused too.
func Pool(hidden, mask *Node, p pooling.Pooling) *Node {
	if p == pooling.CLS {
		panic(errors.New("wordbag: cls pooling would give every text the [CLS] token's vector; use mean pooling"))
	}
	return pooling.Pool(hidden, mask, p, nil)
}
