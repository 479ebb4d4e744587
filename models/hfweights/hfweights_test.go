package hfweights

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

func TestVariablePath(t *testing.T) {
	for _, c := range []struct{ base, name, scope, v string }{
		{"/m", "encoder.layer.0.output.dense.bias", "/m/encoder/layer/0/output/dense", "bias"},
		{"/", "pooler.dense.weight", "/pooler/dense", "weight"},
	} {
		sc, v := VariablePath(c.base, c.name)
		if sc != c.scope || v != c.v {
			t.Errorf("VariablePath(%q, %q) = %q, %q, want %q, %q", c.base, c.name, sc, v, c.scope, c.v)
		}
	}
}

// TestRoundTrip: Init, Write with a prefix, Open stripping it, Read and Set into a new store
// give back the same values; the pad row is zero, biases zero, vectors one.
func TestRoundTrip(t *testing.T) {
	params := []Param{
		{"embeddings.word_embeddings.weight", []int{5, 3}},
		{"embeddings.LayerNorm.weight", []int{3}},
		{"embeddings.LayerNorm.bias", []int{3}},
	}
	src := model.NewStore()
	if err := Init(src.RootScope(), params, rand.New(rand.NewPCG(1, 2)), 0.02, 2, dtypes.Float32); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(src.RootScope(), params, dir, func(n string) string { return "m." + n }); err != nil {
		t.Fatal(err)
	}
	weights, err := Open(dir, "test", func(n string) (string, bool) { return strings.CutPrefix(n, "m.") })
	if err != nil {
		t.Fatal(err)
	}
	values, err := Read(dir, "test", weights, params)
	if err != nil {
		t.Fatal(err)
	}
	dst := model.NewStore()
	for _, p := range params {
		if err := Set(dst.RootScope(), p.Name, values[p.Name]); err != nil {
			t.Fatal(err)
		}
	}
	get := func(s *model.Store, name string) []float32 {
		sc, vn := VariablePath(s.RootScope().Scope(), name)
		v, err := s.GetVariable(model.JoinPath(sc, vn)).Value()
		if err != nil {
			t.Fatal(err)
		}
		return tensors.MustCopyFlatData[float32](v)
	}
	for _, p := range params {
		if a, b := get(src, p.Name), get(dst, p.Name); !slices.Equal(a, b) {
			t.Errorf("%s: wrote %v, read %v", p.Name, a, b)
		}
	}
	emb := get(dst, params[0].Name)
	if !slices.Equal(emb[6:9], []float32{0, 0, 0}) || slices.Equal(emb[0:3], []float32{0, 0, 0}) {
		t.Errorf("word embeddings %v: want row 2 (only) zero", emb)
	}
	if w, b := get(dst, params[1].Name), get(dst, params[2].Name); !slices.Equal(w, []float32{1, 1, 1}) || !slices.Equal(b, []float32{0, 0, 0}) {
		t.Errorf("LayerNorm weight %v bias %v, want ones and zeros", w, b)
	}
	bad := []Param{{params[0].Name, []int{5, 4}}}
	if _, err := Read(dir, "test", weights, bad); err == nil || !strings.Contains(err.Error(), "has shape") {
		t.Errorf("Read with wrong shape: err = %v, want a shape error", err)
	}
	if err := Set(dst.RootScope(), params[1].Name, tensors.FromFlatDataAndDimensions([]float32{1, 2}, 2)); err == nil {
		t.Error("Set of a mis-shaped value over an existing variable: no error")
	}
}

func TestOpenErrors(t *testing.T) {
	keep := func(n string) (string, bool) { return n, true }
	for _, c := range []struct{ name, index, want string }{
		{"no files", "", "neither model.safetensors nor"},
		{"shard path", `{"weight_map": {"a": "../x.safetensors"}}`, "must be a plain file name"},
		{"bad json", `{`, "model.safetensors.index.json"},
	} {
		dir := t.TempDir()
		if c.index != "" {
			if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(c.index), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Open(dir, "test", keep); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}
