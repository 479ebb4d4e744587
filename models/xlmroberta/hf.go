package xlmroberta

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/bert"
	"github.com/toolret/toolret/models/hfweights"
)

// Params lists the encoder's parameters in HF naming (pooler included when cfg.HasPooler()):
// BERT's.
func Params(cfg *Config) []hfweights.Param { return bert.Params(&cfg.Config) }

// normalize maps a checkpoint tensor name to toolret's HF name (without the "roberta." prefix
// task models use); ok is false for tensors outside the encoder (lm_head, classifier,
// position_ids buffers).
func normalize(name string) (string, bool) {
	name = strings.TrimPrefix(name, Prefix+".")
	if !strings.HasPrefix(name, "embeddings.") && !strings.HasPrefix(name, "encoder.") && !strings.HasPrefix(name, "pooler.") {
		return "", false
	}
	if strings.HasSuffix(name, "position_ids") || strings.HasSuffix(name, "token_type_ids") {
		return "", false
	}
	return name, true
}

// LoadHF reads an HF XLM-RoBERTa directory (config.json + model.safetensors or a sharded
// index) into variables under scope. Every tensor is read and checked before any variable is
// touched.
func LoadHF(scope *model.Scope, dir string) (*Config, error) {
	return hfweights.LoadEncoder(scope, dir, ModelType, normalize, LoadConfig,
		func(c *Config, pooler bool) { c.Pooler = &pooler }, Params)
}

// SaveHF writes cfg and the variables under scope as an HF directory (config.json,
// model.safetensors in F32; tensor names with the "roberta." prefix when prefix is true).
func SaveHF(scope *model.Scope, cfg *Config, dir string, prefix bool) error {
	p := ""
	if prefix {
		p = Prefix
	}
	c := *cfg
	c.ModelType = ModelType
	if len(c.Architectures) == 0 {
		c.Architectures = []string{"XLMRobertaModel"}
	}
	return hfweights.Save(scope, Params(cfg), dir, p, &c)
}

// Init creates (or overwrites) the variables under scope with HF's
// XLMRobertaPreTrainedModel initialisation (normal(0, initializer_range) matrices and
// embeddings, zero biases, unit LayerNorm scales, a zero padding row); the values depend only
// on cfg and seed.
func Init(scope *model.Scope, cfg *Config, seed uint64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 0x786c6d72))
	if err := hfweights.Init(scope, Params(cfg), rng, cfg.InitializerRange, cfg.PadTokenID, cfg.dtype()); err != nil {
		return fmt.Errorf("xlm-roberta init: %w", err)
	}
	return nil
}
