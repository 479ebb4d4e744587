package encoder

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/gemma3"
)

// The "gemma3_text" registration: models/gemma3 (EmbeddingGemma) behind Config. New starts
// from EmbeddingGemma-300M (bidirectional attention, no Dense modules) with the given sizes
// (given a hidden size or heads, head_dim becomes hidden / heads and every head has its own
// key-value head). LoadHF reads a sentence-transformers directory's Dense modules
// (modules.json: 2_Dense, 3_Dense) with the model; Pool applies them after the pooling, so a
// Dense module is part of the encoder (OwnsSTDense). Gemma3 has no token types (TypeVocab 1,
// types ignored, PairsWithOneType) and no pooler layer. No ONNX graph yet: it does not
// implement ONNX, so export -format onnx refuses it and -format hf notes the missing
// model.onnx.
func init() {
	Register(gemma3.ModelType, Type{
		New: func(s Sizes) (Config, error) {
			c := gemma3.Default()
			s.applyShape(&c.VocabSize, &c.HiddenSize, &c.NumHiddenLayers, &c.NumAttentionHeads)
			if s.Hidden != 0 || s.Heads != 0 {
				c.HeadDim = c.HiddenSize / c.NumAttentionHeads
				c.NumKeyValueHeads = c.NumAttentionHeads
				c.QueryPreAttnScalar = float64(c.HeadDim)
				c.IntermediateSize = 3 * c.HiddenSize / 2
			}
			setNonZero(&c.IntermediateSize, s.Intermediate)
			setNonZero(&c.MaxPositionEmbeddings, s.MaxPositions)
			return gemma3Config{c}, nil
		},
		Unmarshal: func(b []byte) (Config, error) {
			c := gemma3.Default()
			c.UseBidirectionalAttention, c.LayerTypes, c.RopeParameters = false, nil, nil
			if err := json.Unmarshal(b, c); err != nil {
				return nil, err
			}
			return gemma3Config{c}, nil
		},
		LoadHF: func(scope *model.Scope, dir string) (Config, error) {
			dense, err := stDenseDirs(dir)
			if err != nil {
				return nil, err
			}
			c, err := gemma3.LoadHF(scope, dir, dense)
			if err != nil {
				return nil, err
			}
			return gemma3Config{c}, nil
		},
	})
}

// stDenseDirs returns the directories of the Dense modules a sentence-transformers directory's
// modules.json lists, in order (none without modules.json).
func stDenseDirs(dir string) ([]string, error) {
	var mods []struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	mp := filepath.Join(dir, "modules.json")
	found, err := readJSON(mp, &mods)
	if err != nil || !found {
		return nil, err
	}
	var out []string
	for _, m := range mods {
		if k, _ := STModuleOf(m.Type); k != STModDense {
			continue
		}
		if !filepath.IsLocal(m.Path) {
			return nil, fmt.Errorf("%s: module path %q leaves the model directory", mp, m.Path)
		}
		out = append(out, filepath.Join(dir, m.Path))
	}
	return out, nil
}

// gemma3Config is a *gemma3.Config as a Config. The pointer is never modified: the With
// methods copy.
type gemma3Config struct{ c *gemma3.Config }

func (x gemma3Config) ModelType() string  { return gemma3.ModelType }
func (x gemma3Config) Validate() error    { return x.c.Validate() }
func (x gemma3Config) Hidden() int        { return x.c.HiddenSize }
func (x gemma3Config) Layers() int        { return x.c.NumHiddenLayers }
func (x gemma3Config) MaxPositions() int  { return x.c.MaxPositionEmbeddings }
func (x gemma3Config) Vocab() int         { return x.c.VocabSize }
func (x gemma3Config) TypeVocab() int     { return 1 }
func (x gemma3Config) Dropout() float64   { return 0 }
func (x gemma3Config) InitRange() float64 { return x.c.InitializerRange }
func (x gemma3Config) HasPooler() bool    { return false }
func (x gemma3Config) Params() []Param    { return gemma3.Params(x.c) }
func (x gemma3Config) HF() HFNames {
	return HFNames{gemma3.Prefix, "Gemma3TextModel", "Gemma3TextForSequenceClassification"}
}

// PairsWithOneType: Gemma3 has no token types (see PairsWithOneType).
func (x gemma3Config) PairsWithOneType() bool { return true }

// OwnsSTDense reports whether the encoder applies its sentence-transformers Dense modules
// itself (in Pool): readers of a sentence-transformers directory leave those modules to it.
func (x gemma3Config) OwnsSTDense() bool { return len(x.c.Dense) > 0 }

// STDenseDirs are the directories, relative to the model directory, SaveHF writes the Dense
// modules to ("2_Dense", "3_Dense"), in order: the entries a writer of modules.json lists
// after the Pooling module.
func (x gemma3Config) STDenseDirs() []string {
	out := make([]string, len(x.c.Dense))
	for i := range out {
		out[i] = gemma3.DenseDir(i)
	}
	return out
}

// Causal reports whether the model attends causally (Gemma 3's language models; not
// EmbeddingGemma, use_bidirectional_attention).
func (x gemma3Config) Causal() bool { return !x.c.UseBidirectionalAttention }

// WithPooler returns x: Gemma3 has no pooler layer to add (PoolPooler is an error).
func (x gemma3Config) WithPooler(bool) Config { return x }

func (x gemma3Config) WithDType(dt dtypes.DType) Config {
	c := *x.c
	c.DType = dt
	return gemma3Config{&c}
}

func (x gemma3Config) Encode(scope *model.Scope, ids, types, mask *Node) *Node {
	return gemma3.Encode(scope, x.c, ids, types, mask)
}

func (x gemma3Config) Embed(scope *model.Scope, ids, types, mask *Node) *Node {
	return gemma3.Embed(scope, x.c, ids, types, mask)
}

func (x gemma3Config) EncodeEmbedded(scope *model.Scope, h, mask *Node) *Node {
	return gemma3.Layers(scope, x.c, h, mask)
}

func (x gemma3Config) Pool(scope *model.Scope, hidden, mask *Node, p Pooling) *Node {
	return gemma3.Pool(scope, x.c, hidden, mask, p)
}

func (x gemma3Config) Init(scope *model.Scope, seed uint64) error {
	return gemma3.Init(scope, x.c, seed)
}

func (x gemma3Config) SaveHF(scope *model.Scope, dir string, prefix bool) error {
	return gemma3.SaveHF(scope, x.c, dir, prefix)
}

func (x gemma3Config) MarshalJSON() ([]byte, error) { return x.c.MarshalJSON() }
