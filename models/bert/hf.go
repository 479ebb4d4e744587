package bert

import (
	"encoding/json"
	"fmt"
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

// Param is one HF parameter of the encoder.
type Param struct {
	Name  string // HF name without the "bert." prefix
	Shape []int
}

// Params lists the encoder's parameters in HF naming for cfg (pooler included when
// cfg.HasPooler()).
func Params(cfg *Config) []Param {
	h, i := cfg.HiddenSize, cfg.IntermediateSize
	ps := []Param{
		{"embeddings.word_embeddings.weight", []int{cfg.VocabSize, h}},
		{"embeddings.position_embeddings.weight", []int{cfg.MaxPositionEmbeddings, h}},
		{"embeddings.token_type_embeddings.weight", []int{cfg.TypeVocabSize, h}},
		{"embeddings.LayerNorm.weight", []int{h}},
		{"embeddings.LayerNorm.bias", []int{h}},
	}
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		for _, m := range []string{"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"} {
			ps = append(ps, Param{p + m + ".weight", []int{h, h}}, Param{p + m + ".bias", []int{h}})
		}
		ps = append(ps,
			Param{p + "attention.output.LayerNorm.weight", []int{h}}, Param{p + "attention.output.LayerNorm.bias", []int{h}},
			Param{p + "intermediate.dense.weight", []int{i, h}}, Param{p + "intermediate.dense.bias", []int{i}},
			Param{p + "output.dense.weight", []int{h, i}}, Param{p + "output.dense.bias", []int{h}},
			Param{p + "output.LayerNorm.weight", []int{h}}, Param{p + "output.LayerNorm.bias", []int{h}})
	}
	if cfg.HasPooler() {
		ps = append(ps, Param{"pooler.dense.weight", []int{h, h}}, Param{"pooler.dense.bias", []int{h}})
	}
	return ps
}

// variablePath converts an HF parameter name into the variable's scope and name under base
// ("encoder.layer.0.output.dense.bias" -> "/base/encoder/layer/0/output/dense", "bias").
func variablePath(base, name string) (scope, varName string) {
	parts := strings.Split(name, ".")
	return model.JoinPath(append([]string{base}, parts[:len(parts)-1]...)...), parts[len(parts)-1]
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

type source struct {
	file *safetensors.File
	name string // original tensor name
}

// openWeights indexes model.safetensors, or the shards listed in model.safetensors.index.json.
func openWeights(dir string) (map[string]source, error) {
	files := []string{filepath.Join(dir, "model.safetensors")}
	if _, err := os.Stat(files[0]); err != nil {
		idxPath := filepath.Join(dir, "model.safetensors.index.json")
		b, ierr := os.ReadFile(idxPath)
		if ierr != nil {
			return nil, fmt.Errorf("bert checkpoint %s: neither model.safetensors nor model.safetensors.index.json found", dir)
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
			if filepath.Base(f) != f || f == "" {
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
			hf, ok := normalize(n)
			if !ok {
				continue
			}
			if prev, dup := out[hf]; dup {
				return nil, fmt.Errorf("bert checkpoint %s: tensor %q appears twice (%s in %s, %s in %s)", dir, hf, prev.name, prev.file.Name, n, path)
			}
			out[hf] = source{f, n}
		}
	}
	return out, nil
}

// LoadHF reads an HF BERT directory (config.json + model.safetensors or sharded index) and
// creates (or overwrites) the encoder variables under scope. Every tensor is read and checked
// before any variable is touched, so a bad checkpoint never half-loads.
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
	values := map[string]*tensors.Tensor{}
	params := Params(cfg)
	for _, p := range params {
		src, ok := weights[p.Name]
		if !ok {
			return nil, fmt.Errorf("bert checkpoint %s: missing tensor %q", dir, p.Name)
		}
		data, shape, err := src.file.Float32(src.name)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(shape, p.Shape) {
			return nil, fmt.Errorf("bert checkpoint %s: tensor %q has shape %v, config.json implies %v", dir, src.name, shape, p.Shape)
		}
		values[p.Name] = tensors.FromFlatDataAndDimensions(data, shape...)
	}
	for _, p := range params {
		if err := setVariable(scope, p.Name, values[p.Name]); err != nil {
			return nil, fmt.Errorf("bert checkpoint %s: %w", dir, err)
		}
	}
	return cfg, nil
}

func setVariable(scope *model.Scope, name string, value *tensors.Tensor) error {
	sc, vn := variablePath(scope.Scope(), name)
	store := scope.Store()
	if v := store.GetVariable(model.JoinPath(sc, vn)); v != nil {
		if !v.Shape().Equal(value.Shape()) {
			return fmt.Errorf("variable %s has shape %s, checkpoint tensor %q has %s", v.Path(), v.Shape(), name, value.Shape())
		}
		return v.SetValue(value)
	}
	_, err := store.Scope(sc).CreateVariable(vn, value)
	return err
}

// SaveHF writes cfg and the encoder variables under scope as an HF directory: config.json and
// model.safetensors (F32, HF names, with the "bert." prefix when prefix is true).
func SaveHF(scope *model.Scope, cfg *Config, dir string, prefix bool) error {
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
			for i, v := range d64 {
				data[i] = float32(v)
			}
		} else if data, err = tensors.CopyFlatData[float32](t); err != nil {
			return fmt.Errorf("save %s: %q: %w", dir, p.Name, err)
		}
		name := p.Name
		if prefix {
			name = "bert." + name
		}
		ts = append(ts, safetensors.Tensor{Name: name, Shape: p.Shape, Data: data})
	}
	if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
		return err
	}
	return cfg.Save(filepath.Join(dir, "config.json"))
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
			if p.Name == "embeddings.word_embeddings.weight" && cfg.PadTokenID >= 0 && cfg.PadTokenID < cfg.VocabSize {
				clear(vals[cfg.PadTokenID*cfg.HiddenSize : (cfg.PadTokenID+1)*cfg.HiddenSize])
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
		if err := setVariable(scope, p.Name, t); err != nil {
			return fmt.Errorf("bert init: %w", err)
		}
	}
	return nil
}
