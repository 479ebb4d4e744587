package gemma3

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/hfweights"
	"github.com/toolret/toolret/models/qwen3"
	"github.com/toolret/toolret/safetensors"
)

// Prefix is HF's base_model_prefix: Gemma3ForCausalLM names the encoder's tensors
// "model.<name>".
const Prefix = "model"

// DensePrefix names the sentence-transformers Dense modules' parameters:
// "st_dense.<i>.linear.weight" and ".bias".
const DensePrefix = "st_dense"

// Params lists the parameters in HF naming (Gemma3TextModel's, without "model."), then
// those of the Dense modules (DenseParams).
func Params(cfg *Config) []hfweights.Param {
	return append(ModelParams(cfg), DenseParams(cfg)...)
}

// ModelParams lists Gemma3TextModel's parameters (model.safetensors): Qwen3Model's layout
// with pre_ and post_feedforward_layernorm.
func ModelParams(cfg *Config) []hfweights.Param {
	return qwen3.DecoderParams(cfg.dims())
}

// dims are the decoder's sizes (Validate checks them as qwen3's).
func (c *Config) dims() qwen3.Dims {
	return qwen3.Dims{Vocab: c.VocabSize, Hidden: c.HiddenSize, Layers: c.NumHiddenLayers,
		Heads: c.NumAttentionHeads, KVHeads: c.NumKeyValueHeads, HeadDim: c.HeadDim,
		Intermediate: c.IntermediateSize, AttentionBias: c.AttentionBias,
		FFNNorms: []string{"pre_feedforward_layernorm.weight", "post_feedforward_layernorm.weight"}}
}

// DenseParams lists the Dense modules' parameters.
func DenseParams(cfg *Config) []hfweights.Param {
	var ps []hfweights.Param
	for i, d := range cfg.Dense {
		ps = append(ps, hfweights.Param{Name: fmt.Sprintf("%s.%d.linear.weight", DensePrefix, i), Shape: []int{d.Out, d.In}})
		if d.Bias {
			ps = append(ps, hfweights.Param{Name: fmt.Sprintf("%s.%d.linear.bias", DensePrefix, i), Shape: []int{d.Out}})
		}
	}
	return ps
}

// normalize maps a checkpoint tensor name to toolret's HF name (without "model."); ok is
// false for tensors outside the text model (lm_head, a multimodal checkpoint's vision tower).
func normalize(name string) (string, bool) {
	name = strings.TrimPrefix(name, Prefix+".")
	name = strings.TrimPrefix(name, "language_model.")
	if name == "embed_tokens.weight" || name == "norm.weight" || strings.HasPrefix(name, "layers.") {
		return name, true
	}
	return "", false
}

// identity lists the activation_function values of a Dense module that are the identity.
var identity = []string{"torch.nn.modules.linear.Identity", "torch.nn.Identity", "torch.nn.modules.Identity"}

// ReadDense reads the sentence-transformers Dense module in directory dir (its config.json
// and model.safetensors): only the identity activation (EmbeddingGemma's) is supported.
func ReadDense(dir string) (Dense, map[string][]float32, error) {
	var c struct {
		Dense
		Activation string `json:"activation_function"`
	}
	cp := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(cp)
	if err != nil {
		return Dense{}, nil, fmt.Errorf("Dense module: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Dense{}, nil, fmt.Errorf("%s: %w", cp, err)
	}
	if !slices.Contains(identity, c.Activation) {
		return Dense{}, nil, fmt.Errorf("%s: activation_function %q not supported (torch.nn.modules.linear.Identity)", cp, c.Activation)
	}
	if c.In <= 0 || c.Out <= 0 {
		return Dense{}, nil, fmt.Errorf("%s: in_features %d, out_features %d must be > 0", cp, c.In, c.Out)
	}
	wp := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(wp)
	if err != nil {
		return Dense{}, nil, fmt.Errorf("Dense module (only model.safetensors is read): %w", err)
	}
	vals := map[string][]float32{}
	want := map[string][]int{"linear.weight": {c.Out, c.In}}
	if c.Bias {
		want["linear.bias"] = []int{c.Out}
	}
	for name, shape := range want {
		data, got, err := f.Float32(name)
		if err != nil {
			return Dense{}, nil, fmt.Errorf("%s: %w", wp, err)
		}
		if !slices.Equal(got, shape) {
			return Dense{}, nil, fmt.Errorf("%s: tensor %q has shape %v, config.json implies %v", wp, name, got, shape)
		}
		vals[name] = data
	}
	return c.Dense, vals, nil
}

// LoadHF reads an HF Gemma3 text directory (config.json + model.safetensors or a sharded
// index) into variables under scope, and the sentence-transformers Dense modules in the
// directories dense (in order; none for a bare model) as parameters DensePrefix.<i>.linear.*.
// Every tensor is read and checked before any variable is touched.
func LoadHF(scope *model.Scope, dir string, dense []string) (*Config, error) {
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	cfg.Dense = nil
	var denseVals []map[string][]float32
	for _, d := range dense {
		m, vals, err := ReadDense(d)
		if err != nil {
			return nil, err
		}
		cfg.Dense = append(cfg.Dense, m)
		denseVals = append(denseVals, vals)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s with its Dense modules: %w", dir, err)
	}
	weights, err := hfweights.Open(dir, ModelType, normalize)
	if err != nil {
		return nil, err
	}
	values, err := hfweights.Read(dir, ModelType, weights, ModelParams(cfg))
	if err != nil {
		return nil, err
	}
	for _, p := range ModelParams(cfg) {
		if err := hfweights.Set(scope, p.Name, hfweights.Convert(values[p.Name], cfg.dtype())); err != nil {
			return nil, fmt.Errorf("%s checkpoint %s: %w", ModelType, dir, err)
		}
	}
	for i, vals := range denseVals {
		for name, data := range vals {
			p := fmt.Sprintf("%s.%d.%s", DensePrefix, i, name)
			shape := []int{cfg.Dense[i].Out}
			if name == "linear.weight" {
				shape = append(shape, cfg.Dense[i].In)
			}
			t := tensors.FromFlatDataAndDimensions(data, shape...)
			if err := hfweights.Set(scope, p, hfweights.Convert(t, cfg.dtype())); err != nil {
				return nil, fmt.Errorf("Dense module %s: %w", dense[i], err)
			}
		}
	}
	return cfg, nil
}

// SaveHF writes cfg and the variables under scope as an HF directory (config.json,
// model.safetensors in F32; tensor names with the "model." prefix when prefix is true) and
// each Dense module as a sentence-transformers module directory <2+i>_Dense (config.json,
// model.safetensors), the paths EmbeddingGemma's modules.json names after its Pooling
// module (writing modules.json is the caller's).
func SaveHF(scope *model.Scope, cfg *Config, dir string, prefix bool) error {
	p := ""
	if prefix {
		p = Prefix
	}
	if err := hfweights.Save(scope, ModelParams(cfg), dir, p, cfg); err != nil {
		return err
	}
	for i, d := range cfg.Dense {
		md := filepath.Join(dir, DenseDir(i))
		pre := fmt.Sprintf("%s.%d.", DensePrefix, i)
		var ps []hfweights.Param
		for _, q := range DenseParams(cfg) {
			if strings.HasPrefix(q.Name, pre) {
				ps = append(ps, q)
			}
		}
		if err := hfweights.Write(scope, ps, md, func(n string) string { return strings.TrimPrefix(n, pre) }); err != nil {
			return err
		}
		c := map[string]any{"in_features": d.In, "out_features": d.Out, "bias": d.Bias, "activation_function": identity[0]}
		if err := hfweights.SaveJSON(filepath.Join(md, "config.json"), c); err != nil {
			return err
		}
	}
	return nil
}

// DenseDir is the directory SaveHF writes Dense module i to: "2_Dense", "3_Dense", ...
func DenseDir(i int) string { return fmt.Sprintf("%d_Dense", i+2) }

// Init creates (or overwrites) the variables under scope with HF's Gemma3PreTrainedModel
// initialisation (normal(0, initializer_range) matrices and embeddings, zero RMSNorm weights,
// which the norm adds to 1, zero biases) and normal(0, initializer_range) Dense weights; the
// values depend only on cfg and seed.
func Init(scope *model.Scope, cfg *Config, seed uint64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 0x67656d61))
	if err := hfweights.Init(scope, Params(cfg), rng, cfg.InitializerRange, -1, cfg.dtype()); err != nil {
		return fmt.Errorf("gemma3 init: %w", err)
	}
	// hfweights.Init sets 1-D weights (LayerNorm scales) to one; Gemma's RMSNorm weights are
	// centred on 0.
	for _, p := range Params(cfg) {
		if len(p.Shape) == 1 && strings.HasSuffix(p.Name, "norm.weight") {
			if err := hfweights.Set(scope, p.Name, hfweights.Convert(tensors.FromFlatDataAndDimensions(make([]float32, p.Shape[0]), p.Shape...), cfg.dtype())); err != nil {
				return fmt.Errorf("gemma3 init: %w", err)
			}
		}
	}
	return nil
}
