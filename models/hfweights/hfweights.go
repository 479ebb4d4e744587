// Package hfweights reads and writes the encoder weights of Hugging Face checkpoint
// directories (model.safetensors, or shards listed in model.safetensors.index.json) and
// sets the GoMLX variables they map to. The model packages (bert, deberta) supply their
// parameter lists and tensor naming; the file handling, checks and variable layout are here,
// and the config.json fields they share (Config).
package hfweights

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
	"github.com/toolret/toolret/internal/jsonfile"
	"github.com/toolret/toolret/safetensors"
)

// Param is one HF parameter of an encoder.
type Param struct {
	Name  string // HF name without the model's prefix ("bert.", "deberta.")
	Shape []int
}

// Source is where a tensor is stored: its file and its name in that file.
type Source struct {
	File *safetensors.File
	Name string
}

// VariablePath converts an HF parameter name into the variable's scope and name under base
// ("encoder.layer.0.output.dense.bias" -> "/base/encoder/layer/0/output/dense", "bias").
func VariablePath(base, name string) (scope, varName string) {
	parts := strings.Split(name, ".")
	return model.JoinPath(append([]string{base}, parts[:len(parts)-1]...)...), parts[len(parts)-1]
}

// Open indexes the tensors of dir's model.safetensors, or of the shards listed in
// model.safetensors.index.json, by the name rename gives them; tensors for which rename
// returns false are left out. kind ("bert", "deberta") names the checkpoint in errors.
func Open(dir, kind string, rename func(string) (string, bool)) (map[string]Source, error) {
	files := []string{filepath.Join(dir, "model.safetensors")}
	if _, err := os.Stat(files[0]); err != nil {
		idxPath := filepath.Join(dir, "model.safetensors.index.json")
		b, ierr := os.ReadFile(idxPath)
		if ierr != nil {
			return nil, fmt.Errorf("%s checkpoint %s: neither model.safetensors nor model.safetensors.index.json found", kind, dir)
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
	out := map[string]Source{}
	for _, path := range files {
		f, err := safetensors.Open(path)
		if err != nil {
			return nil, err
		}
		for _, n := range f.Names() {
			name, ok := rename(n)
			if !ok {
				continue
			}
			if prev, dup := out[name]; dup {
				return nil, fmt.Errorf("%s checkpoint %s: tensor %q appears twice (%s in %s, %s in %s)", kind, dir, name, prev.Name, prev.File.Name, n, path)
			}
			out[name] = Source{f, n}
		}
	}
	return out, nil
}

// Read reads every parameter of params from weights as float32, checking that each is
// present with the shape params gives. kind and dir name the checkpoint in errors.
func Read(dir, kind string, weights map[string]Source, params []Param) (map[string]*tensors.Tensor, error) {
	values := make(map[string]*tensors.Tensor, len(params))
	for _, p := range params {
		src, ok := weights[p.Name]
		if !ok {
			return nil, fmt.Errorf("%s checkpoint %s: missing tensor %q", kind, dir, p.Name)
		}
		data, shape, err := src.File.Float32(src.Name)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(shape, p.Shape) {
			return nil, fmt.Errorf("%s checkpoint %s: tensor %q has shape %v, config.json implies %v", kind, dir, src.Name, shape, p.Shape)
		}
		values[p.Name] = tensors.FromFlatDataAndDimensions(data, shape...)
	}
	return values, nil
}

// Set creates (or overwrites) the variable of HF parameter name under scope with value.
// An existing variable of another shape is an error.
func Set(scope *model.Scope, name string, value *tensors.Tensor) error {
	sc, vn := VariablePath(scope.Scope(), name)
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

// Convert returns value (float32) converted to dt; other values and dtypes are returned as is.
func Convert(value *tensors.Tensor, dt dtypes.DType) *tensors.Tensor {
	if dt != dtypes.Float64 || value.DType() != dtypes.Float32 {
		return value
	}
	f := tensors.MustCopyFlatData[float32](value)
	d := make([]float64, len(f))
	for i, v := range f {
		d[i] = float64(v)
	}
	return tensors.FromFlatDataAndDimensions(d, value.Shape().Dimensions...)
}

// Write writes the variables of params under scope to dir/model.safetensors (F32), naming
// each tensor rename(p.Name). It creates dir if needed.
func Write(scope *model.Scope, params []Param, dir string, rename func(string) string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var ts []safetensors.Tensor
	for _, p := range params {
		sc, vn := VariablePath(scope.Scope(), p.Name)
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
		ts = append(ts, safetensors.Tensor{Name: rename(p.Name), Shape: p.Shape, Data: data})
	}
	return safetensors.Write(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"})
}

// Init creates (or overwrites) the variables of params under scope with HF's from-scratch
// initialisation: biases ("*.bias") zero, other vectors (LayerNorm weights) one, matrices and
// embeddings normal(0, std) drawn from rng in params order, and row pad of
// embeddings.word_embeddings.weight zero when pad is a valid row. Values are of dtype dt
// (Float64, else Float32).
func Init(scope *model.Scope, params []Param, rng *rand.Rand, std float64, pad int, dt dtypes.DType) error {
	for _, p := range params {
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
				vals[i] = rng.NormFloat64() * std
			}
			if p.Name == "embeddings.word_embeddings.weight" && pad >= 0 && pad < p.Shape[0] {
				w := p.Shape[1]
				clear(vals[pad*w : (pad+1)*w])
			}
		}
		var t *tensors.Tensor
		if dt == dtypes.Float64 {
			t = tensors.FromFlatDataAndDimensions(vals, p.Shape...)
		} else {
			f := make([]float32, n)
			for i, v := range vals {
				f[i] = float32(v)
			}
			t = tensors.FromFlatDataAndDimensions(f, p.Shape...)
		}
		if err := Set(scope, p.Name, t); err != nil {
			return err
		}
	}
	return nil
}

// Load reads dir's checkpoint (tensors renamed by rename, as Open) into the variables of
// params(pooler) under scope, pooler telling whether the checkpoint has "pooler.dense.weight".
// Every tensor is read and checked before any variable is touched, so a bad checkpoint never
// half-loads. kind ("bert") names the checkpoint in errors.
func Load(scope *model.Scope, dir, kind string, rename func(string) (string, bool), params func(pooler bool) []Param) (pooler bool, err error) {
	weights, err := Open(dir, kind, rename)
	if err != nil {
		return false, err
	}
	_, pooler = weights["pooler.dense.weight"]
	ps := params(pooler)
	values, err := Read(dir, kind, weights, ps)
	if err != nil {
		return false, err
	}
	for _, p := range ps {
		if err := Set(scope, p.Name, values[p.Name]); err != nil {
			return false, fmt.Errorf("%s checkpoint %s: %w", kind, dir, err)
		}
	}
	return pooler, nil
}

// Save writes the variables of params under scope as an HF directory: model.safetensors (F32;
// each tensor named prefix + "." + its name when prefix is not empty, as task models name the
// encoder's tensors) and cfg as config.json.
func Save(scope *model.Scope, params []Param, dir, prefix string, cfg any) error {
	rename := func(name string) string {
		if prefix != "" {
			return prefix + "." + name
		}
		return name
	}
	if err := Write(scope, params, dir, rename); err != nil {
		return err
	}
	return SaveJSON(filepath.Join(dir, "config.json"), cfg)
}

// ReadConfig decodes the HF config.json at path into c (holding its defaults) and validates
// it; errors name the file.
func ReadConfig(path string, c interface{ Validate() error }) error {
	if err := jsonfile.Read(path, c); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// LoadConfig decodes the HF config.json at path into c, which holds the defaults of the
// fields a file may omit, validates it (ReadConfig) and returns it.
func LoadConfig[C interface{ Validate() error }](path string, c C) (C, error) {
	if err := ReadConfig(path, c); err != nil {
		var zero C
		return zero, err
	}
	return c, nil
}

// LoadEncoder reads an HF encoder directory: its config.json with loadConfig, then its
// weights under scope (Load, every tensor checked before any variable is touched), telling
// the configuration whether the checkpoint has a pooler (setPooler) before its parameters
// (params) are listed.
func LoadEncoder[C any](scope *model.Scope, dir, kind string, rename func(string) (string, bool),
	loadConfig func(path string) (C, error), setPooler func(C, bool), params func(C) []Param) (C, error) {
	cfg, err := loadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return cfg, err
	}
	pooler, err := Load(scope, dir, kind, rename, func(pooler bool) []Param {
		setPooler(cfg, pooler)
		return params(cfg)
	})
	if err != nil {
		var zero C
		return zero, err
	}
	setPooler(cfg, pooler)
	return cfg, nil
}
