package wordbag

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/hfweights"
)

// Prefix is the tensor-name prefix task models give the encoder's parameters.
const Prefix = "wordbag"

// LoadHF reads a word-bag directory (config.json and model.safetensors, as SaveHF writes it)
// into variables under scope, every tensor checked before any variable is set.
func LoadHF(scope *model.Scope, dir string) (*Config, error) {
	c, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	weights, err := hfweights.Open(dir, ModelType, func(name string) (string, bool) {
		name = strings.TrimPrefix(name, Prefix+".")
		return name, strings.HasPrefix(name, "embeddings.")
	})
	if err != nil {
		return nil, err
	}
	params := Params(c)
	values, err := hfweights.Read(dir, ModelType, weights, params)
	if err != nil {
		return nil, err
	}
	for _, p := range params {
		if err := hfweights.Set(scope, p.Name, values[p.Name]); err != nil {
			return nil, fmt.Errorf("wordbag checkpoint %s: %w", dir, err)
		}
	}
	return c, nil
}

// SaveHF writes c (config.json) and the variables under scope (model.safetensors, F32; names
// prefixed "wordbag." when prefix is true).
func SaveHF(scope *model.Scope, c *Config, dir string, prefix bool) error {
	p := ""
	if prefix {
		p = Prefix
	}
	return hfweights.Save(scope, Params(c), dir, p, c)
}

// Init creates (or overwrites) the variables under scope: word vectors normal(0,
// initializer_range) from seed, the pad token's zero, and the word weights c.IDF (ones without).
func Init(scope *model.Scope, c *Config, seed uint64) error {
	if err := c.Validate(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	if err := hfweights.Init(scope, Params(c), rng, c.InitializerRange, c.PadTokenID, c.dtype()); err != nil {
		return fmt.Errorf("wordbag init: %w", err)
	}
	if c.IDF == nil {
		return nil
	}
	t := tensors.FromFlatDataAndDimensions(append([]float32(nil), c.IDF...), len(c.IDF))
	if err := hfweights.Set(scope, Weights, hfweights.Convert(t, c.dtype())); err != nil {
		return fmt.Errorf("wordbag init: %w", err)
	}
	return nil
}
