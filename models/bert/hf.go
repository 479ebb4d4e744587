package bert

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/hfweights"
)

// Param is one HF parameter of the encoder (name without the "bert." prefix, shape).
type Param = hfweights.Param

// Params lists the encoder's parameters in HF naming for cfg (pooler included when
// cfg.HasPooler()).
func Params(cfg *Config) []Param {
	h, i := cfg.HiddenSize, cfg.IntermediateSize
	ps := []Param{
		{Name: "embeddings.word_embeddings.weight", Shape: []int{cfg.VocabSize, h}},
		{Name: "embeddings.position_embeddings.weight", Shape: []int{cfg.MaxPositionEmbeddings, h}},
		{Name: "embeddings.token_type_embeddings.weight", Shape: []int{cfg.TypeVocabSize, h}},
		{Name: "embeddings.LayerNorm.weight", Shape: []int{h}},
		{Name: "embeddings.LayerNorm.bias", Shape: []int{h}},
	}
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		for _, m := range []string{"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"} {
			ps = append(ps, Param{Name: p + m + ".weight", Shape: []int{h, h}}, Param{Name: p + m + ".bias", Shape: []int{h}})
		}
		ps = append(ps,
			Param{Name: p + "attention.output.LayerNorm.weight", Shape: []int{h}}, Param{Name: p + "attention.output.LayerNorm.bias", Shape: []int{h}},
			Param{Name: p + "intermediate.dense.weight", Shape: []int{i, h}}, Param{Name: p + "intermediate.dense.bias", Shape: []int{i}},
			Param{Name: p + "output.dense.weight", Shape: []int{h, i}}, Param{Name: p + "output.dense.bias", Shape: []int{h}},
			Param{Name: p + "output.LayerNorm.weight", Shape: []int{h}}, Param{Name: p + "output.LayerNorm.bias", Shape: []int{h}})
	}
	if cfg.HasPooler() {
		ps = append(ps, Param{Name: "pooler.dense.weight", Shape: []int{h, h}}, Param{Name: "pooler.dense.bias", Shape: []int{h}})
	}
	return ps
}

// normalize maps a checkpoint tensor name to toolret's HF name: drops the "bert." prefix and
// renames old LayerNorm gamma/beta to weight/bias. ok is false for tensors that are not part of
// the encoder (MLM heads, position_ids buffers).
func normalize(name string) (string, bool) {
	name = strings.TrimPrefix(name, "bert.")
	if !strings.HasPrefix(name, "embeddings.") && !strings.HasPrefix(name, "encoder.") && !strings.HasPrefix(name, "pooler.") {
		return "", false
	}
	if strings.HasSuffix(name, "position_ids") {
		return "", false
	}
	if strings.HasSuffix(name, ".gamma") {
		name = strings.TrimSuffix(name, ".gamma") + ".weight"
	} else if strings.HasSuffix(name, ".beta") {
		name = strings.TrimSuffix(name, ".beta") + ".bias"
	}
	return name, true
}

// LoadHF reads an HF BERT directory (config.json + model.safetensors or sharded index) and
// creates (or overwrites) the encoder variables under scope. Every tensor is read and checked
// before any variable is touched, so a bad checkpoint never half-loads.
func LoadHF(scope *model.Scope, dir string) (*Config, error) {
	return hfweights.LoadEncoder(scope, dir, "bert", normalize, LoadConfig,
		func(c *Config, pooler bool) { c.Pooler = &pooler }, Params)
}

// SaveHF writes cfg and the encoder variables under scope as an HF directory: config.json and
// model.safetensors (F32, HF names, with the "bert." prefix when prefix is true).
func SaveHF(scope *model.Scope, cfg *Config, dir string, prefix bool) error {
	p := ""
	if prefix {
		p = "bert"
	}
	return hfweights.Save(scope, Params(cfg), dir, p, cfg)
}

// Init creates (or overwrites) the encoder variables under scope with a from-scratch
// initialisation following HF's BertPreTrainedModel._init_weights: matrices and embeddings
// normal(0, initializer_range), biases zero, LayerNorm weights one, and the pad_token_id row
// of the word embeddings zero. The values depend only on cfg and seed.
func Init(scope *model.Scope, cfg *Config, seed uint64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	if err := hfweights.Init(scope, Params(cfg), rng, cfg.InitializerRange, cfg.PadTokenID, cfg.dtype()); err != nil {
		return fmt.Errorf("bert init: %w", err)
	}
	return nil
}
