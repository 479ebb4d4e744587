package mpnet

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/hfweights"
)

// Params lists the encoder's parameters in HF naming (pooler included when cfg.HasPooler()).
func Params(cfg *Config) []hfweights.Param {
	h, i := cfg.HiddenSize, cfg.IntermediateSize
	ps := []hfweights.Param{
		{Name: "embeddings.word_embeddings.weight", Shape: []int{cfg.VocabSize, h}},
		{Name: "embeddings.position_embeddings.weight", Shape: []int{cfg.MaxPositionEmbeddings, h}},
		{Name: "embeddings.LayerNorm.weight", Shape: []int{h}},
		{Name: "embeddings.LayerNorm.bias", Shape: []int{h}},
	}
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		for _, m := range []string{"attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o"} {
			ps = append(ps, hfweights.Param{Name: p + m + ".weight", Shape: []int{h, h}}, hfweights.Param{Name: p + m + ".bias", Shape: []int{h}})
		}
		for _, m := range []struct {
			name    string
			out, in int
		}{{"intermediate.dense", i, h}, {"output.dense", h, i}} {
			ps = append(ps, hfweights.Param{Name: p + m.name + ".weight", Shape: []int{m.out, m.in}}, hfweights.Param{Name: p + m.name + ".bias", Shape: []int{m.out}})
		}
		for _, m := range []string{"attention.LayerNorm", "output.LayerNorm"} {
			ps = append(ps, hfweights.Param{Name: p + m + ".weight", Shape: []int{h}}, hfweights.Param{Name: p + m + ".bias", Shape: []int{h}})
		}
	}
	ps = append(ps, hfweights.Param{Name: "encoder.relative_attention_bias.weight", Shape: []int{cfg.RelativeBuckets, cfg.NumAttentionHeads}})
	if cfg.HasPooler() {
		ps = append(ps, hfweights.Param{Name: "pooler.dense.weight", Shape: []int{h, h}}, hfweights.Param{Name: "pooler.dense.bias", Shape: []int{h}})
	}
	return ps
}

// normalize maps a checkpoint tensor name to toolret's HF name (without the "mpnet." prefix
// task models use); ok is false for tensors outside the encoder (the MLM head, position_ids).
func normalize(name string) (string, bool) {
	name = strings.TrimPrefix(name, Prefix+".")
	if !strings.HasPrefix(name, "embeddings.") && !strings.HasPrefix(name, "encoder.") && !strings.HasPrefix(name, "pooler.") {
		return "", false
	}
	if strings.HasSuffix(name, "position_ids") {
		return "", false
	}
	return name, true
}

// LoadHF reads an HF MPNet directory (config.json + model.safetensors or a sharded index) into
// variables under scope. Every tensor is read and checked before any variable is touched.
func LoadHF(scope *model.Scope, dir string) (*Config, error) {
	return hfweights.LoadEncoder(scope, dir, ModelType, normalize, LoadConfig,
		func(c *Config, pooler bool) { c.Pooler = &pooler }, Params)
}

// SaveHF writes cfg and the variables under scope as an HF directory (config.json,
// model.safetensors in F32; tensor names with the "mpnet." prefix when prefix is true).
func SaveHF(scope *model.Scope, cfg *Config, dir string, prefix bool) error {
	p := ""
	if prefix {
		p = Prefix
	}
	return hfweights.Save(scope, Params(cfg), dir, p, cfg)
}

// Init creates (or overwrites) the variables under scope with HF's MPNetPreTrainedModel
// initialisation (normal(0, initializer_range) matrices and embeddings, zero biases, unit
// LayerNorm scales, a zero padding row); the values depend only on cfg and seed.
func Init(scope *model.Scope, cfg *Config, seed uint64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d706e))
	if err := hfweights.Init(scope, Params(cfg), rng, cfg.InitializerRange, cfg.PadTokenID, cfg.dtype()); err != nil {
		return fmt.Errorf("mpnet init: %w", err)
	}
	return nil
}
