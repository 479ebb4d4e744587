package deberta

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/hfweights"
)

// Prefix is HF's base_model_prefix: DebertaV2For* task models name the encoder's tensors
// "deberta." + name. The ContextPooler of DebertaV2ForSequenceClassification is outside the
// encoder: its tensors are "pooler.dense.*" with or without a prefixed encoder.
const Prefix = "deberta"

// Warnings receives the one line LoadHF writes when it skips tensors of a checkpoint that the
// encoder does not use (pretraining heads).
var Warnings io.Writer = os.Stderr

// Param is one HF parameter of the encoder (name without the "deberta." prefix, shape).
type Param = hfweights.Param

// Params lists the encoder's parameters in HF naming for cfg (the ContextPooler included
// when cfg.HasPooler()).
func Params(cfg *Config) []Param {
	h, i, e := cfg.HiddenSize, cfg.IntermediateSize, cfg.Embedding()
	ps := []Param{{Name: "embeddings.word_embeddings.weight", Shape: []int{cfg.VocabSize, e}}}
	if cfg.PositionBiasedInput {
		ps = append(ps, Param{Name: "embeddings.position_embeddings.weight", Shape: []int{cfg.MaxPositionEmbeddings, e}})
	}
	if cfg.TypeVocabSize > 0 {
		ps = append(ps, Param{Name: "embeddings.token_type_embeddings.weight", Shape: []int{cfg.TypeVocabSize, e}})
	}
	if e != h {
		ps = append(ps, Param{Name: "embeddings.embed_proj.weight", Shape: []int{h, e}})
	}
	ps = append(ps, Param{Name: "embeddings.LayerNorm.weight", Shape: []int{h}}, Param{Name: "embeddings.LayerNorm.bias", Shape: []int{h}})
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		lin := func(name string, out, in int) {
			ps = append(ps, Param{Name: p + name + ".weight", Shape: []int{out, in}}, Param{Name: p + name + ".bias", Shape: []int{out}})
		}
		lin("attention.self.query_proj", h, h)
		lin("attention.self.key_proj", h, h)
		lin("attention.self.value_proj", h, h)
		if cfg.RelativeAttention && !cfg.ShareAttKey {
			if cfg.has("c2p") {
				lin("attention.self.pos_key_proj", h, h)
			}
			if cfg.has("p2c") {
				lin("attention.self.pos_query_proj", h, h)
			}
		}
		lin("attention.output.dense", h, h)
		ps = append(ps, Param{Name: p + "attention.output.LayerNorm.weight", Shape: []int{h}}, Param{Name: p + "attention.output.LayerNorm.bias", Shape: []int{h}})
		lin("intermediate.dense", i, h)
		lin("output.dense", h, i)
		ps = append(ps, Param{Name: p + "output.LayerNorm.weight", Shape: []int{h}}, Param{Name: p + "output.LayerNorm.bias", Shape: []int{h}})
	}
	if cfg.RelativeAttention {
		ps = append(ps, Param{Name: "encoder.rel_embeddings.weight", Shape: []int{2 * cfg.Span(), h}})
		if cfg.normRel() {
			ps = append(ps, Param{Name: "encoder.LayerNorm.weight", Shape: []int{h}}, Param{Name: "encoder.LayerNorm.bias", Shape: []int{h}})
		}
	}
	if cfg.HasPooler() {
		ps = append(ps, Param{Name: "pooler.dense.weight", Shape: []int{h, h}}, Param{Name: "pooler.dense.bias", Shape: []int{h}})
	}
	return ps
}

// stripPrefix names a checkpoint tensor without the "deberta." prefix.
func stripPrefix(name string) (string, bool) {
	return strings.TrimPrefix(name, Prefix+"."), true
}

// unused sorts a checkpoint tensor that is not an encoder parameter: ignored silently
// (position_ids buffers, the classifier of task models, which export reads), skipped with a
// note (pretraining heads, the unused absolute positions of v3 checkpoints, other heads) or,
// for a tensor of the encoder's own modules that cfg does not have, an error.
func unused(cfg *Config, name string) (note string, err error) {
	switch {
	case strings.HasSuffix(name, "position_ids"), strings.HasPrefix(name, "classifier."):
		return "", nil
	case strings.HasPrefix(name, "lm_predictions."):
		return "lm_predictions.*", nil
	case strings.HasPrefix(name, "mask_predictions."):
		return "mask_predictions.*", nil
	case name == "embeddings.position_embeddings.weight" && !cfg.PositionBiasedInput:
		return name + " (position_biased_input is false)", nil
	case strings.HasPrefix(name, "embeddings."), strings.HasPrefix(name, "encoder."), strings.HasPrefix(name, "pooler."):
		return "", fmt.Errorf("tensor %q is not a parameter of the encoder config.json describes", name)
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		return name[:i] + ".*", nil
	}
	return name, nil
}

// LoadHF reads an HF DeBERTa-v2/v3 directory (config.json + model.safetensors or a sharded
// index; tensors with or without the "deberta." prefix) and creates (or overwrites) the
// encoder variables under scope. The ContextPooler is loaded when the checkpoint has
// pooler.dense.*. Pretraining heads (lm_predictions.*, mask_predictions.*), the unused
// embeddings.position_embeddings of v3 checkpoints and other task heads are skipped with one
// line on Warnings; a missing or mis-shaped encoder tensor is an error naming it. Every tensor is
// read and checked before any variable is touched, so a bad checkpoint never half-loads.
func LoadHF(scope *model.Scope, dir string) (*Config, error) {
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	weights, err := hfweights.Open(dir, "deberta", stripPrefix)
	if err != nil {
		return nil, err
	}
	_, hasPooler := weights["pooler.dense.weight"]
	cfg.Pooler = &hasPooler
	params := Params(cfg)
	values, err := hfweights.Read(dir, "deberta", weights, params)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	names := make([]string, 0, len(weights))
	for n := range weights {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := values[n]; ok {
			continue
		}
		note, err := unused(cfg, n)
		if err != nil {
			return nil, fmt.Errorf("deberta checkpoint %s: %w", dir, err)
		}
		if note != "" {
			counts[note]++
		}
	}
	for _, p := range params {
		if err := hfweights.Set(scope, p.Name, hfweights.Convert(values[p.Name], cfg.dtype())); err != nil {
			return nil, fmt.Errorf("deberta checkpoint %s: %w", dir, err)
		}
	}
	if len(counts) > 0 {
		total, parts := 0, make([]string, 0, len(counts))
		for note, n := range counts {
			total += n
			parts = append(parts, fmt.Sprintf("%s (%d)", note, n))
		}
		sort.Strings(parts)
		fmt.Fprintf(Warnings, "deberta: %s: skipped %d tensors the encoder does not use: %s\n", dir, total, strings.Join(parts, ", "))
	}
	return cfg, nil
}

// SaveHF writes cfg and the encoder variables under scope as an HF directory: config.json
// (model_type "deberta-v2") and model.safetensors (F32). With prefix, encoder tensors are
// named "deberta." + name and the ContextPooler "pooler.dense.*", as
// DebertaV2ForSequenceClassification names them.
func SaveHF(scope *model.Scope, cfg *Config, dir string, prefix bool) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rename := func(name string) string {
		if prefix && !strings.HasPrefix(name, "pooler.") {
			return Prefix + "." + name
		}
		return name
	}
	if err := hfweights.Write(scope, Params(cfg), dir, rename); err != nil {
		return err
	}
	return cfg.Save(filepath.Join(dir, "config.json"))
}

// Init creates (or overwrites) the encoder variables under scope with a from-scratch
// initialisation following HF's DebertaV2PreTrainedModel._init_weights: Linear weights and
// embeddings normal(0, initializer_range), biases zero, LayerNorm weights one, and the
// pad_token_id row of the word embeddings zero. The values depend only on cfg and seed.
func Init(scope *model.Scope, cfg *Config, seed uint64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 0xdeb3))
	if err := hfweights.Init(scope, Params(cfg), rng, cfg.InitializerRange, cfg.PadTokenID, cfg.dtype()); err != nil {
		return fmt.Errorf("deberta init: %w", err)
	}
	return nil
}
