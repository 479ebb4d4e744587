package deberta

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/safetensors"
)

// Prefix is HF's base_model_prefix: DebertaV2For* task models name the encoder's tensors
// "deberta." + name. The ContextPooler of DebertaV2ForSequenceClassification is outside the
// encoder: its tensors are "pooler.dense.*" with or without a prefixed encoder.
const Prefix = "deberta"

// Warnings receives the one line LoadHF writes when it skips tensors of a checkpoint that the
// encoder does not use (pretraining heads).
var Warnings io.Writer = os.Stderr

// Param is one HF parameter of the encoder.
type Param struct {
	Name  string // HF name without the "deberta." prefix
	Shape []int
}

// Params lists the encoder's parameters in HF naming for cfg (the ContextPooler included
// when cfg.HasPooler()).
func Params(cfg *Config) []Param {
	h, i, e := cfg.HiddenSize, cfg.IntermediateSize, cfg.Embedding()
	ps := []Param{{"embeddings.word_embeddings.weight", []int{cfg.VocabSize, e}}}
	if cfg.PositionBiasedInput {
		ps = append(ps, Param{"embeddings.position_embeddings.weight", []int{cfg.MaxPositionEmbeddings, e}})
	}
	if cfg.TypeVocabSize > 0 {
		ps = append(ps, Param{"embeddings.token_type_embeddings.weight", []int{cfg.TypeVocabSize, e}})
	}
	if e != h {
		ps = append(ps, Param{"embeddings.embed_proj.weight", []int{h, e}})
	}
	ps = append(ps, Param{"embeddings.LayerNorm.weight", []int{h}}, Param{"embeddings.LayerNorm.bias", []int{h}})
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		lin := func(name string, out, in int) {
			ps = append(ps, Param{p + name + ".weight", []int{out, in}}, Param{p + name + ".bias", []int{out}})
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
		ps = append(ps, Param{p + "attention.output.LayerNorm.weight", []int{h}}, Param{p + "attention.output.LayerNorm.bias", []int{h}})
		lin("intermediate.dense", i, h)
		lin("output.dense", h, i)
		ps = append(ps, Param{p + "output.LayerNorm.weight", []int{h}}, Param{p + "output.LayerNorm.bias", []int{h}})
	}
	if cfg.RelativeAttention {
		ps = append(ps, Param{"encoder.rel_embeddings.weight", []int{2 * cfg.Span(), h}})
		if cfg.normRel() {
			ps = append(ps, Param{"encoder.LayerNorm.weight", []int{h}}, Param{"encoder.LayerNorm.bias", []int{h}})
		}
	}
	if cfg.HasPooler() {
		ps = append(ps, Param{"pooler.dense.weight", []int{h, h}}, Param{"pooler.dense.bias", []int{h}})
	}
	return ps
}

// variablePath converts an HF parameter name into the variable's scope and name under base.
func variablePath(base, name string) (scope, varName string) {
	parts := strings.Split(name, ".")
	return model.JoinPath(append([]string{base}, parts[:len(parts)-1]...)...), parts[len(parts)-1]
}

type source struct {
	file *safetensors.File
	name string // the tensor's name in the file
}

// openWeights indexes model.safetensors, or the shards listed in model.safetensors.index.json,
// by tensor name without the "deberta." prefix.
func openWeights(dir string) (map[string]source, error) {
	files := []string{filepath.Join(dir, "model.safetensors")}
	if _, err := os.Stat(files[0]); err != nil {
		idxPath := filepath.Join(dir, "model.safetensors.index.json")
		b, ierr := os.ReadFile(idxPath)
		if ierr != nil {
			return nil, fmt.Errorf("deberta checkpoint %s: neither model.safetensors nor model.safetensors.index.json found", dir)
		}
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(b, &idx); err != nil {
			return nil, fmt.Errorf("%s: %w", idxPath, err)
		}
		set := map[string]bool{}
		files = files[:0]
		for _, f := range idx.WeightMap {
			if f == "" || filepath.Base(f) != f {
				return nil, fmt.Errorf("%s: shard name %q must be a plain file name", idxPath, f)
			}
			if !set[f] {
				set[f] = true
				files = append(files, filepath.Join(dir, f))
			}
		}
		sort.Strings(files)
	}
	out := map[string]source{}
	for _, path := range files {
		f, err := safetensors.Open(path)
		if err != nil {
			return nil, err
		}
		for _, n := range f.Names() {
			name := strings.TrimPrefix(n, Prefix+".")
			if prev, dup := out[name]; dup {
				return nil, fmt.Errorf("deberta checkpoint %s: tensor %q appears twice (%s in %s, %s in %s)", dir, name, prev.name, prev.file.Name, n, path)
			}
			out[name] = source{f, n}
		}
	}
	return out, nil
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
	weights, err := openWeights(dir)
	if err != nil {
		return nil, err
	}
	_, hasPooler := weights["pooler.dense.weight"]
	cfg.Pooler = &hasPooler
	params := Params(cfg)
	values := map[string]*tensors.Tensor{}
	for _, p := range params {
		src, ok := weights[p.Name]
		if !ok {
			return nil, fmt.Errorf("deberta checkpoint %s: missing tensor %q", dir, p.Name)
		}
		data, shape, err := src.file.Float32(src.name)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(shape, p.Shape) {
			return nil, fmt.Errorf("deberta checkpoint %s: tensor %q has shape %v, config.json implies %v", dir, src.name, shape, p.Shape)
		}
		values[p.Name] = tensors.FromFlatDataAndDimensions(data, shape...)
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
		if err := setVariable(scope, p.Name, values[p.Name], cfg.dtype()); err != nil {
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

// setVariable creates or overwrites the variable of HF parameter name under scope with value
// (float32) converted to dt.
func setVariable(scope *model.Scope, name string, value *tensors.Tensor, dt dtypes.DType) error {
	if dt == dtypes.Float64 && value.DType() == dtypes.Float32 {
		f := tensors.MustCopyFlatData[float32](value)
		d := make([]float64, len(f))
		for i, v := range f {
			d[i] = float64(v)
		}
		value = tensors.FromFlatDataAndDimensions(d, value.Shape().Dimensions...)
	}
	sc, vn := variablePath(scope.Scope(), name)
	store := scope.Store()
	if v := store.GetVariable(model.JoinPath(sc, vn)); v != nil {
		if !v.Shape().Equal(value.Shape()) {
			return fmt.Errorf("variable %s has shape %s, tensor %q has %s", v.Path(), v.Shape(), name, value.Shape())
		}
		return v.SetValue(value)
	}
	_, err := store.Scope(sc).CreateVariable(vn, value)
	return err
}

// SaveHF writes cfg and the encoder variables under scope as an HF directory: config.json
// (model_type "deberta-v2") and model.safetensors (F32). With prefix, encoder tensors are
// named "deberta." + name and the ContextPooler "pooler.dense.*", as
// DebertaV2ForSequenceClassification names them.
func SaveHF(scope *model.Scope, cfg *Config, dir string, prefix bool) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var ts []safetensors.Tensor
	for _, p := range Params(cfg) {
		sc, vn := variablePath(scope.Scope(), p.Name)
		v := scope.Store().GetVariable(model.JoinPath(sc, vn))
		if v == nil {
			return fmt.Errorf("save %s: variable for %q not found in scope %s", dir, p.Name, scope.Scope())
		}
		t, err := v.Value()
		if err != nil {
			return fmt.Errorf("save %s: %q: %w", dir, p.Name, err)
		}
		var data []float32
		if t.DType() == dtypes.Float64 {
			d64, err := tensors.CopyFlatData[float64](t)
			if err != nil {
				return fmt.Errorf("save %s: %q: %w", dir, p.Name, err)
			}
			data = make([]float32, len(d64))
			for i, x := range d64 {
				data[i] = float32(x)
			}
		} else if data, err = tensors.CopyFlatData[float32](t); err != nil {
			return fmt.Errorf("save %s: %q: %w", dir, p.Name, err)
		}
		if !slices.Equal(t.Shape().Dimensions, p.Shape) {
			return fmt.Errorf("save %s: variable for %q has shape %v, the config implies %v", dir, p.Name, t.Shape().Dimensions, p.Shape)
		}
		name := p.Name
		if prefix && !strings.HasPrefix(name, "pooler.") {
			name = Prefix + "." + name
		}
		ts = append(ts, safetensors.Tensor{Name: name, Shape: p.Shape, Data: data})
	}
	if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
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
	for _, p := range Params(cfg) {
		n := 1
		for _, d := range p.Shape {
			n *= d
		}
		vals := make([]float64, n)
		switch {
		case strings.HasSuffix(p.Name, ".bias"):
		case len(p.Shape) == 1: // LayerNorm weight
			for i := range vals {
				vals[i] = 1
			}
		default:
			for i := range vals {
				vals[i] = rng.NormFloat64() * cfg.InitializerRange
			}
			if p.Name == "embeddings.word_embeddings.weight" {
				e := p.Shape[1]
				clear(vals[cfg.PadTokenID*e : (cfg.PadTokenID+1)*e])
			}
		}
		var t *tensors.Tensor
		if cfg.dtype() == dtypes.Float64 {
			t = tensors.FromFlatDataAndDimensions(vals, p.Shape...)
		} else {
			f := make([]float32, n)
			for i, v := range vals {
				f[i] = float32(v)
			}
			t = tensors.FromFlatDataAndDimensions(f, p.Shape...)
		}
		if err := setVariable(scope, p.Name, t, cfg.dtype()); err != nil {
			return fmt.Errorf("deberta init: %w", err)
		}
	}
	return nil
}
