package qwen3

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/hfweights"
)

// Prefix is HF's base_model_prefix: Qwen3ForCausalLM names the encoder's tensors
// "model.<name>".
const Prefix = "model"

// Params lists the encoder's parameters in HF naming (Qwen3Model's, without "model.").
func Params(cfg *Config) []hfweights.Param {
	return DecoderParams(cfg.dims())
}

// dims are the decoder's sizes.
func (c *Config) dims() Dims {
	return Dims{Vocab: c.VocabSize, Hidden: c.HiddenSize, Layers: c.NumHiddenLayers,
		Heads: c.NumAttentionHeads, KVHeads: c.NumKeyValueHeads, HeadDim: c.HeadDim,
		Intermediate: c.IntermediateSize, AttentionBias: c.AttentionBias}
}

// Validate checks d, with the model's max_position_embeddings and rms_norm_eps, for the
// configuration of model (named in the errors).
func (d Dims) Validate(model string, maxPositions int, rmsNormEps float64) error {
	switch {
	case d.Vocab <= 0:
		return fmt.Errorf("%s config: vocab_size %d must be > 0", model, d.Vocab)
	case d.Hidden <= 0 || d.Layers <= 0 || d.Heads <= 0 || d.Intermediate <= 0 || d.HeadDim <= 0:
		return fmt.Errorf("%s config: hidden_size %d, num_hidden_layers %d, num_attention_heads %d, intermediate_size %d, head_dim %d must all be > 0",
			model, d.Hidden, d.Layers, d.Heads, d.Intermediate, d.HeadDim)
	case d.HeadDim%2 != 0:
		return fmt.Errorf("%s config: head_dim %d must be even (RoPE rotates halves)", model, d.HeadDim)
	case d.KVHeads <= 0 || d.Heads%d.KVHeads != 0:
		return fmt.Errorf("%s config: num_attention_heads %d is not a multiple of num_key_value_heads %d", model, d.Heads, d.KVHeads)
	case maxPositions <= 0:
		return fmt.Errorf("%s config: max_position_embeddings %d must be > 0", model, maxPositions)
	case rmsNormEps <= 0:
		return fmt.Errorf("%s config: rms_norm_eps %v must be > 0", model, rmsNormEps)
	}
	return nil
}

// Dims are the sizes of a decoder laid out as Qwen3Model (Gemma3TextModel shares the layout).
type Dims struct {
	Vocab, Hidden, Layers, Heads, KVHeads, HeadDim, Intermediate int
	// AttentionBias: the q, k, v and o projections have biases.
	AttentionBias bool
	// FFNNorms are the RMSNorm weights (of width Hidden) a layer has after
	// post_attention_layernorm: Gemma3's pre_ and post_feedforward_layernorm.
	FFNNorms []string
}

// DecoderParams lists the parameters of a decoder with dims d in HF naming (without the
// base_model_prefix): the token embeddings, each layer's attention (with q_norm and k_norm)
// and gated MLP, and the final norm.
func DecoderParams(d Dims) []hfweights.Param {
	h, dh := d.Hidden, d.HeadDim
	qOut, kvOut := d.Heads*dh, d.KVHeads*dh
	ps := []hfweights.Param{{Name: "embed_tokens.weight", Shape: []int{d.Vocab, h}}}
	for l := 0; l < d.Layers; l++ {
		p := fmt.Sprintf("layers.%d.", l)
		add := func(name string, shape ...int) { ps = append(ps, hfweights.Param{Name: p + name, Shape: shape}) }
		add("input_layernorm.weight", h)
		for _, proj := range []struct {
			name string
			out  int
		}{{"q_proj", qOut}, {"k_proj", kvOut}, {"v_proj", kvOut}} {
			add("self_attn."+proj.name+".weight", proj.out, h)
			if d.AttentionBias {
				add("self_attn."+proj.name+".bias", proj.out)
			}
		}
		add("self_attn.o_proj.weight", h, qOut)
		if d.AttentionBias {
			add("self_attn.o_proj.bias", h)
		}
		add("self_attn.q_norm.weight", dh)
		add("self_attn.k_norm.weight", dh)
		add("post_attention_layernorm.weight", h)
		for _, n := range d.FFNNorms {
			add(n, h)
		}
		add("mlp.gate_proj.weight", d.Intermediate, h)
		add("mlp.up_proj.weight", d.Intermediate, h)
		add("mlp.down_proj.weight", h, d.Intermediate)
	}
	return append(ps, hfweights.Param{Name: "norm.weight", Shape: []int{h}})
}

// normalize maps a checkpoint tensor name to toolret's HF name (without "model."); ok is
// false for tensors outside the encoder (lm_head, rotary buffers).
func normalize(name string) (string, bool) {
	name = strings.TrimPrefix(name, Prefix+".")
	if name == "embed_tokens.weight" || name == "norm.weight" {
		return name, true
	}
	if strings.HasPrefix(name, "layers.") && !strings.Contains(name, "rotary_emb") {
		return name, true
	}
	return "", false
}

// LoadHF reads an HF Qwen3 directory (config.json + model.safetensors or a sharded index)
// into variables under scope. Every tensor is read and checked before any variable is
// touched.
func LoadHF(scope *model.Scope, dir string) (*Config, error) {
	return hfweights.LoadEncoder(scope, dir, ModelType, normalize, LoadConfig,
		func(*Config, bool) {}, Params)
}

// SaveHF writes cfg and the variables under scope as an HF directory (config.json,
// model.safetensors in F32; tensor names with the "model." prefix when prefix is true).
func SaveHF(scope *model.Scope, cfg *Config, dir string, prefix bool) error {
	p := ""
	if prefix {
		p = Prefix
	}
	return hfweights.Save(scope, Params(cfg), dir, p, cfg)
}

// Init creates (or overwrites) the variables under scope with HF's Qwen3PreTrainedModel
// initialisation (normal(0, initializer_range) matrices and embeddings, unit RMSNorm weights,
// zero biases); the values depend only on cfg and seed.
func Init(scope *model.Scope, cfg *Config, seed uint64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 0x7177656e))
	if err := hfweights.Init(scope, Params(cfg), rng, cfg.InitializerRange, -1, cfg.dtype()); err != nil {
		return fmt.Errorf("qwen3 init: %w", err)
	}
	return nil
}
