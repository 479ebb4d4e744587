// Package encoder is the one interface every model kind (bi-encoder, cross-encoder,
// classifiers, export, the commands) uses for its transformer encoder. Implementations
// register themselves by HuggingFace model_type: "bert" (models/bert, registered in bert.go),
// "deberta-v2" (DeBERTa-v2/v3, models/deberta, registered in deberta.go), "mpnet"
// (models/mpnet), "xlm-roberta" (models/xlmroberta: multilingual-e5, bge-m3), "qwen3"
// (models/qwen3: Qwen3-Embedding) and "gemma3_text" (models/gemma3: EmbeddingGemma).
// Adding another architecture is one registration file here plus its own package.
//
// Variables live under scope paths that mirror HF parameter names ("encoder.layer.0.output.
// dense.bias" is variable "bias" in scope "<base>/encoder/layer/0/output/dense"), so HF
// checkpoints map one to one (see VariablePath).
//
// Model configurations store an encoder as `"encoder": {"model_type": "bert", ...}` with the
// HF config.json fields of the implementation; UnmarshalModel also reads the older
// `"bert": {...}` form.
package encoder

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
	"github.com/toolret/toolret/models/hfweights"
	"github.com/toolret/toolret/models/pooling"
	"github.com/toolret/toolret/tokenize"
)

// Pooling names how token states become one vector per text.
type Pooling = pooling.Pooling

// Poolings.
const (
	PoolCLS    = pooling.CLS    // the first ([CLS]) token's final hidden state
	PoolMean   = pooling.Mean   // mean over real (unpadded) tokens
	PoolPooler = pooling.Pooler // the model's pooler layer over [CLS] (needs HasPooler)
	PoolNone   = pooling.None   // no pooling: all token states [batch, seq, hidden]
	PoolLast   = pooling.Last   // the last real token's state (decoders: Qwen3-Embedding)
)

// ParsePooling validates a pooling name.
func ParsePooling(s string) (Pooling, error) { return pooling.Parse(s) }

// Param is one parameter of an encoder: its HF name (without the base-model prefix, e.g.
// "embeddings.word_embeddings.weight") and shape.
type Param = hfweights.Param

// HFNames are an implementation's HuggingFace names.
type HFNames struct {
	// Prefix is HF's base_model_prefix: task models (XxxForSequenceClassification) name the
	// encoder's tensors Prefix + "." + name.
	Prefix string
	// Model and SequenceClassification are the config.json architectures of the bare encoder
	// and of the encoder with a sequence-classification head.
	Model, SequenceClassification string
}

// Config is an encoder configuration, and the encoder it defines. Implementations are
// immutable values: the With methods return modified copies.
type Config interface {
	// ModelType is the HF model_type ("bert").
	ModelType() string
	// Validate checks the configuration is usable.
	Validate() error

	Hidden() int       // hidden size: the width of token states and pooled vectors
	Layers() int       // number of layers
	MaxPositions() int // the longest sequence (tokens, specials included) the encoder takes
	Vocab() int        // vocabulary size (the tokenizer's must equal it)
	TypeVocab() int    // number of token types (pairs need 2)
	// Dropout is the hidden dropout probability, also used by task heads over the encoder.
	Dropout() float64
	// InitRange is the standard deviation of the normal initialisation of weight matrices,
	// also used by task heads.
	InitRange() float64

	// HasPooler reports whether the model has (and PoolPooler uses) a pooler layer over
	// [CLS], parameters "pooler.dense.weight" [hidden, hidden] and "pooler.dense.bias"
	// [hidden]: BERT's dense + tanh, DeBERTa's ContextPooler dense + pooler_hidden_act (GELU),
	// each what the architecture's HF XxxForSequenceClassification applies.
	HasPooler() bool
	// WithPooler returns a copy that has (or has not) the pooler layer.
	WithPooler(has bool) Config
	// WithDType returns a copy whose variables and computation use dtype (Float32, the
	// default, or Float64 for gradient checks). Checkpoints are F32 on disk whatever the dtype.
	WithDType(dt dtypes.DType) Config

	// Encode runs the encoder over a batch: ids and types int32 [batch, seq] (types may be nil
	// for all zeros), mask [batch, seq] with 1 for real tokens and 0 for padding (any numeric
	// dtype). It returns the last hidden states [batch, seq, Hidden()]. Padding never changes
	// the states of real tokens; dropout is active only when the scope is training; encoding
	// twice in one graph reuses the weights. Graph-building errors panic (model.Exec turns
	// them into errors).
	Encode(scope *model.Scope, ids, types, mask *Node) *Node
	// Embed is Encode's embedding layer alone: [batch, seq, Hidden()] (dropout when training).
	// Encode(ids, types, mask) is EncodeEmbedded(Embed(ids, types, mask), mask); a model that appends
	// inputs of its own after the embedding layer (the ToolRefiner's tool slots) embeds,
	// concatenates along the sequence axis and runs EncodeEmbedded over the whole.
	Embed(scope *model.Scope, ids, types, mask *Node) *Node
	// EncodeEmbedded runs the encoder's layers over embedded inputs x [batch, seq, Hidden()] with mask
	// [batch, seq] (1 for real positions). seq may exceed MaxPositions: the layers themselves
	// use no absolute position (relative positions, where the encoder has them, are those of x).
	EncodeEmbedded(scope *model.Scope, x, mask *Node) *Node
	// Pool reduces hidden [batch, seq, hidden] to [batch, hidden] with p (PoolNone returns
	// hidden unchanged); mask as for Encode.
	Pool(scope *model.Scope, hidden, mask *Node, p Pooling) *Node

	// Params lists the parameters (pooler included when HasPooler), in HF naming.
	Params() []Param
	// Init creates (or overwrites) the variables under scope with a from-scratch
	// initialisation that depends only on the configuration and seed.
	Init(scope *model.Scope, seed uint64) error
	// SaveHF writes the configuration and the variables under scope as an HF directory
	// (config.json, model.safetensors in F32); with prefix the tensor names carry
	// HF().Prefix, as task models name them.
	SaveHF(scope *model.Scope, dir string, prefix bool) error
	// HF returns the implementation's HuggingFace names.
	HF() HFNames

	// MarshalJSON writes the HF config.json fields, model_type included.
	MarshalJSON() ([]byte, error)
}

// Sizes are the dimensions of a new encoder; zero fields keep the implementation's default
// (bert: bert-base-uncased).
type Sizes struct {
	Vocab, Hidden, Layers, Heads, Intermediate, MaxPositions int
}

// apply sets the sizes s gives (non-zero fields) on an HF configuration: vocabulary, hidden
// size, layers, heads, and the intermediate size (4 x hidden unless given). MaxPositions is
// each implementation's to apply (MPNet numbers positions after the padding id).
func (s Sizes) apply(c *hfweights.Config) {
	s.applyShape(&c.VocabSize, &c.HiddenSize, &c.NumHiddenLayers, &c.NumAttentionHeads)
	c.IntermediateSize = 4 * c.HiddenSize
	setNonZero(&c.IntermediateSize, s.Intermediate)
}

// applyShape sets the vocabulary size, hidden size, layers and heads that s gives (non-zero
// fields) on an implementation's configuration.
func (s Sizes) applyShape(vocab, hidden, layers, heads *int) {
	setNonZero(vocab, s.Vocab)
	setNonZero(hidden, s.Hidden)
	setNonZero(layers, s.Layers)
	setNonZero(heads, s.Heads)
}

// setNonZero sets *dst to v unless v is zero (which keeps the default).
func setNonZero(dst *int, v int) {
	if v != 0 {
		*dst = v
	}
}

// Type is a registered implementation.
type Type struct {
	// New returns the default configuration with s applied.
	New func(s Sizes) (Config, error)
	// Unmarshal parses the implementation's config.json fields.
	Unmarshal func(b []byte) (Config, error)
	// LoadHF reads an HF directory (config.json and model.safetensors or a sharded index)
	// into variables under scope, checking every tensor before it touches any variable.
	LoadHF func(scope *model.Scope, dir string) (Config, error)
}

var (
	typesMu sync.RWMutex
	types   = map[string]Type{}
)

// Register makes an implementation available under its HF model_type. It panics on a
// duplicate or incomplete registration (a programming error: registrations are in init).
func Register(modelType string, t Type) {
	typesMu.Lock()
	defer typesMu.Unlock()
	if _, dup := types[modelType]; dup || modelType == "" || t.New == nil || t.Unmarshal == nil || t.LoadHF == nil {
		panic(fmt.Sprintf("encoder: bad or duplicate registration of model_type %q", modelType))
	}
	types[modelType] = t
}

// ModelTypes lists the registered model types, sorted.
func ModelTypes() []string {
	typesMu.RLock()
	defer typesMu.RUnlock()
	out := make([]string, 0, len(types))
	for k := range types {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func lookup(modelType string) (Type, error) {
	typesMu.RLock()
	t, ok := types[modelType]
	typesMu.RUnlock()
	if !ok {
		return Type{}, fmt.Errorf("model_type %q not supported (supported: %s)", modelType, strings.Join(ModelTypes(), ", "))
	}
	return t, nil
}

// New returns a new configuration of modelType with the given sizes, validated.
func New(modelType string, s Sizes) (Config, error) {
	t, err := lookup(modelType)
	if err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	c, err := t.New(s)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// modelType reads the model_type field of a JSON object.
func modelType(b []byte) (string, error) {
	var m struct {
		ModelType *string `json:"model_type"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", err
	}
	if m.ModelType == nil {
		return "", nil
	}
	return *m.ModelType, nil
}

// Unmarshal parses a configuration (HF config.json fields), choosing the implementation by
// its model_type, which must be present. It does not validate.
func Unmarshal(b []byte) (Config, error) {
	return unmarshal(b, "")
}

// unmarshal parses b with the implementation of its model_type, or of def when b has none
// (def "" makes a missing model_type an error).
func unmarshal(b []byte, def string) (Config, error) {
	mt, err := modelType(b)
	if err != nil {
		return nil, fmt.Errorf("encoder config: %w", err)
	}
	if mt == "" {
		if def == "" {
			return nil, fmt.Errorf("encoder config: no model_type (supported: %s)", strings.Join(ModelTypes(), ", "))
		}
		mt = def
	}
	t, err := lookup(mt)
	if err != nil {
		return nil, fmt.Errorf("encoder config: %w", err)
	}
	c, err := t.Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("encoder config (%s): %w", mt, err)
	}
	return c, nil
}

// Override returns a copy of c with the given config.json fields replaced (for example
// {"hidden_act": "relu"}), validated.
func Override(c Config, fields map[string]any) (Config, error) {
	b, err := c.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range fields {
		if k == "model_type" {
			return nil, fmt.Errorf("encoder: Override cannot change model_type")
		}
		m[k] = v
	}
	if b, err = json.Marshal(m); err != nil {
		return nil, fmt.Errorf("encoder: override: %w", err)
	}
	out, err := unmarshal(b, c.ModelType())
	if err != nil {
		return nil, err
	}
	out = out.WithPooler(c.HasPooler())
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return out, nil
}

// LegacyKey is the key under which older model configurations stored a BERT encoder.
const LegacyKey = "bert"

// UnmarshalModel decodes a model configuration b into v (a pointer to a struct type without
// the UnmarshalJSON method, typically `type plain Config; (*plain)(c)`), except for its
// encoder: the value of the "encoder" key, or in configurations written before encoders
// were pluggable, of the "bert" key (model_type "bert" when absent). The encoder is nil when
// b has neither; nothing is validated. Model configurations call it from UnmarshalJSON:
//
//	func (c *Config) UnmarshalJSON(b []byte) error {
//		type plain Config
//		enc, err := encoder.UnmarshalModel(b, (*plain)(c))
//		c.Encoder = enc
//		return err
//	}
func UnmarshalModel(b []byte, v any) (Config, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	enc, legacy := m["encoder"], m[LegacyKey]
	delete(m, "encoder")
	delete(m, LegacyKey)
	rest, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(rest, v); err != nil {
		return nil, err
	}
	switch {
	case !isNull(enc):
		return unmarshal(enc, "")
	case !isNull(legacy):
		return unmarshal(legacy, "bert")
	}
	return nil, nil
}

func isNull(b json.RawMessage) bool {
	s := strings.TrimSpace(string(b))
	return s == "" || s == "null"
}

// LoadHF reads an HF model directory into variables under scope with the implementation
// named by its config.json model_type.
func LoadHF(scope *model.Scope, dir string) (Config, error) {
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	mt, err := modelType(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if mt == "" {
		return nil, fmt.Errorf("%s: no model_type (supported: %s)", p, strings.Join(ModelTypes(), ", "))
	}
	t, err := lookup(mt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return t.LoadHF(scope, dir)
}

// In returns the scope for base ("" or "/" is the root) within root.
func In(root *model.Scope, base string) *model.Scope {
	s := root
	for _, p := range strings.Split(base, "/") {
		if p != "" {
			s = s.At("%s", p)
		}
	}
	return s
}

// VariablePath converts an HF parameter name into the variable's scope and name under the
// scope path base ("encoder.layer.0.output.dense.bias" -> "/base/encoder/layer/0/output/dense",
// "bias").
func VariablePath(base, name string) (scope, varName string) {
	parts := strings.Split(name, ".")
	return model.JoinPath(append([]string{base}, parts[:len(parts)-1]...)...), parts[len(parts)-1]
}

// Variable returns the variable of HF parameter name of the encoder under base in store, or
// nil.
func Variable(store *model.Store, base, name string) *model.Variable {
	sc, vn := VariablePath(In(store.RootScope(), base).Scope(), name)
	return store.GetVariable(model.JoinPath(sc, vn))
}

// ONNX is implemented by encoders that export can write as ONNX graphs.
type ONNX interface {
	// ONNX adds the encoder to g and returns the name of the last hidden states [batch,
	// sequence, hidden] (float32): ids and types are int64 [batch, sequence] values of g, mask
	// the float32 attention mask [batch, sequence]. param returns the float32 values of a
	// parameter by HF name (Params); it may return nil after recording an error, which the
	// caller checks once the graph is built.
	ONNX(g *onnxgraph.Builder, param func(name string) []float32, ids, types, mask string) string
	// ONNXPooler adds the pooler layer over the [CLS] states cls [batch, hidden].
	ONNXPooler(g *onnxgraph.Builder, param func(name string) []float32, cls string) string
}

// PairsWithOneType reports whether c encodes text pairs with a single token type, as HF's
// RoBERTa-family models do (XLM-RoBERTa: type_vocab_size 1, every token of a pair type 0, the
// texts told apart by <s> A </s></s> B </s>): its Encode ignores types when TypeVocab is 1.
// Other encoders with one token type cannot take the type-1 ids of a pair's second text.
func PairsWithOneType(c Config) bool {
	p, ok := c.(interface{ PairsWithOneType() bool })
	return ok && p.PairsWithOneType()
}

// Causal reports whether c attends causally (each token sees those before it only: Qwen3,
// Gemma3 without use_bidirectional_attention), so that its first token's state is of that
// token alone and a head over it cannot read a text.
func Causal(c Config) bool {
	x, ok := c.(interface{ Causal() bool })
	return ok && x.Causal()
}

// CheckVocab reports an error when a tokenizer whose ids need n embedding rows
// (tokenize.Tokenizer.EmbeddingRows) does not fit cfg's embedding table: it can produce ids outside the table, or the table has more than MaxVocabPadding rows
// beyond the tokenizer's tokens (the tokenizer of another model). A few extra rows are fine:
// HF checkpoints pad the table (microsoft/deberta-v3-* have 128,100 rows for 128,001 tokens).
func CheckVocab(n int, cfg Config) error {
	if n > cfg.Vocab() {
		return fmt.Errorf("tokenizer has %d tokens but the model's vocab_size is %d (the embedding table needs a row per token)", n, cfg.Vocab())
	}
	if cfg.Vocab()-n > MaxVocabPadding {
		return fmt.Errorf("tokenizer has %d tokens but the model's vocab_size is %d: more than %d padding rows, the tokenizer is not this model's", n, cfg.Vocab(), MaxVocabPadding)
	}
	return nil
}

// FitVocab checks tok fits cfg's embedding table (CheckVocab of its EmbeddingRows), then
// stops it matching in text the added tokens the table has no row for (tokenize.Tokenizer's
// LimitAdded: the <mask> transformers appends to a Gemma tokenizer it saves).
func FitVocab(tok *tokenize.Tokenizer, cfg Config) error {
	if err := CheckVocab(tok.EmbeddingRows(), cfg); err != nil {
		return err
	}
	tok.LimitAdded(cfg.Vocab())
	return nil
}

// MaxVocabPadding is how many more embedding rows than tokenizer tokens CheckVocab accepts.
const MaxVocabPadding = 128
