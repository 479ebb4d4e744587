package modernbert

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/hfweights"
)

// Params lists the encoder's parameters in HF naming (ModernBertModel's state dict).
func Params(cfg *Config) []hfweights.Param {
	h, i := cfg.HiddenSize, cfg.IntermediateSize
	var ps []hfweights.Param
	norm := func(name string) {
		ps = append(ps, hfweights.Param{Name: name + ".weight", Shape: []int{h}})
		if cfg.NormBias {
			ps = append(ps, hfweights.Param{Name: name + ".bias", Shape: []int{h}})
		}
	}
	linear := func(name string, out, in int, bias bool) {
		ps = append(ps, hfweights.Param{Name: name + ".weight", Shape: []int{out, in}})
		if bias {
			ps = append(ps, hfweights.Param{Name: name + ".bias", Shape: []int{out}})
		}
	}
	ps = append(ps, hfweights.Param{Name: "embeddings.tok_embeddings.weight", Shape: []int{cfg.VocabSize, h}})
	norm("embeddings.norm")
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("layers.%d.", l)
		if l > 0 {
			norm(p + "attn_norm")
		}
		linear(p+"attn.Wqkv", 3*h, h, cfg.AttentionBias)
		linear(p+"attn.Wo", h, h, cfg.AttentionBias)
		norm(p + "mlp_norm")
		linear(p+"mlp.Wi", 2*i, h, cfg.MLPBias)
		linear(p+"mlp.Wo", h, i, cfg.MLPBias)
	}
	norm("final_norm")
	return ps
}

// normalize maps a checkpoint tensor name to toolret's HF name (without the "model." prefix
// task models use); ok is false for tensors outside the encoder (head, decoder, classifier).
func normalize(name string) (string, bool) {
	name = strings.TrimPrefix(name, Prefix+".")
	if strings.HasPrefix(name, "embeddings.") || strings.HasPrefix(name, "layers.") || strings.HasPrefix(name, "final_norm.") {
		return name, true
	}
	return "", false
}

// LoadHF reads an HF ModernBERT directory (config.json + model.safetensors or a sharded
// index) into variables under scope. Every tensor is read and checked before any variable is
// touched.
func LoadHF(scope *model.Scope, dir string) (*Config, error) {
	return hfweights.LoadEncoder(scope, dir, ModelType, normalize, LoadConfig, func(*Config, bool) {}, Params)
}

// SaveHF writes cfg and the variables under scope as an HF directory (config.json,
// model.safetensors in F32; tensor names with the "model." prefix when prefix is true).
func SaveHF(scope *model.Scope, cfg *Config, dir string, prefix bool) error {
	p := ""
	if prefix {
		p = Prefix
	}
	c := *cfg
	c.ModelType = ModelType
	if len(c.Architectures) == 0 {
		c.Architectures = []string{"ModernBertModel"}
	}
	return hfweights.Save(scope, Params(cfg), dir, p, &c)
}

// Init creates (or overwrites) the variables under scope: normal(0, initializer_range)
// matrices and embeddings, zero biases, unit LayerNorm scales (HF truncates the normal at
// initializer_cutoff_factor standard deviations and scales output projections down; a
// from-scratch start needs neither to train). The values depend only on cfg and seed.
func Init(scope *model.Scope, cfg *Config, seed uint64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d6f6465726e))
	if err := hfweights.Init(scope, Params(cfg), rng, cfg.InitializerRange, -1, cfg.dtype()); err != nil {
		return fmt.Errorf("modernbert init: %w", err)
	}
	return nil
}
