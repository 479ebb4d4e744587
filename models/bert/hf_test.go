package bert

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/safetensors"
)

func tinyConfig() *Config {
	c := Default()
	c.VocabSize, c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize, c.MaxPositionEmbeddings = 40, 8, 2, 2, 16, 16
	return c
}

// initTiny creates randomly initialised variables for cfg in a new store.
func initTiny(t *testing.T, cfg *Config) *model.Store {
	t.Helper()
	store := model.NewStore()
	if err := Init(store.RootScope(), cfg, 1); err != nil {
		t.Fatal(err)
	}
	return store
}

func TestInit(t *testing.T) {
	cfg := tinyConfig()
	cfg.VocabSize, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.PadTokenID = 500, 32, 4, 3
	a, b, c := initTiny(t, cfg), initTiny(t, cfg), model.NewStore()
	if err := Init(c.RootScope(), cfg, 2); err != nil {
		t.Fatal(err)
	}
	if n := a.NumVariables(); n != len(Params(cfg)) {
		t.Fatalf("%d variables, want %d", n, len(Params(cfg)))
	}
	get := func(s *model.Store, p string) []float32 {
		return tensors.MustCopyFlatData[float32](s.GetVariable(p).MustValue())
	}
	words := get(a, "/embeddings/word_embeddings/weight")
	sum, sq := 0.0, 0.0
	for i, v := range words {
		if i/cfg.HiddenSize == cfg.PadTokenID && v != 0 {
			t.Fatalf("pad row %d not zero", cfg.PadTokenID)
		}
		sum, sq = sum+float64(v), sq+float64(v)*float64(v)
	}
	n := float64(len(words) - cfg.HiddenSize)
	if std := math.Sqrt(sq/n - (sum/n)*(sum/n)); math.Abs(std-cfg.InitializerRange) > 0.001 {
		t.Errorf("word embeddings std %.4f, want %.4f", std, cfg.InitializerRange)
	}
	for _, v := range get(a, "/encoder/layer/1/output/LayerNorm/weight") {
		if v != 1 {
			t.Fatal("LayerNorm weight not 1")
		}
	}
	for _, v := range get(a, "/encoder/layer/0/attention/self/query/bias") {
		if v != 0 {
			t.Fatal("bias not 0")
		}
	}
	same, other := get(b, "/pooler/dense/weight"), get(c, "/pooler/dense/weight")
	for i, v := range get(a, "/pooler/dense/weight") {
		if v != same[i] {
			t.Fatal("same seed, different values")
		}
		if v == other[i] {
			t.Fatal("different seeds, equal values")
		}
	}
	bad := *cfg
	bad.NumAttentionHeads = 5
	if err := Init(model.NewStore().RootScope(), &bad, 1); err == nil {
		t.Fatal("Init accepted an invalid config")
	}
}

func encodeAll(t *testing.T, store *model.Store, cfg *Config) []float32 {
	t.Helper()
	be, _ := backend.Open("go")
	r, err := NewRunner(be, store, "", cfg, PoolMean)
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Run([][]int32{{1, 5, 7, 2}, {1, 9, 2, 0}}, [][]int32{{0, 0, 1, 1}, {0, 0, 0, 0}}, [][]int32{{1, 1, 1, 1}, {1, 1, 1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](out)
}

func TestSaveLoadRoundTrip(t *testing.T) {
	cfg := tinyConfig()
	store := initTiny(t, cfg)
	dir := t.TempDir()
	if err := SaveHF(store.RootScope(), cfg, dir, true); err != nil {
		t.Fatal(err)
	}
	store2 := model.NewStore()
	cfg2, err := LoadHF(store2.RootScope(), dir)
	if err != nil {
		t.Fatal(err)
	}
	a, b := encodeAll(t, store, cfg), encodeAll(t, store2, cfg2)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("reloaded model differs at %d: %v vs %v", i, a[i], b[i])
		}
	}
}

func TestLoadSharded(t *testing.T) {
	cfg := tinyConfig()
	store := initTiny(t, cfg)
	dir := t.TempDir()
	if err := SaveHF(store.RootScope(), cfg, dir, false); err != nil {
		t.Fatal(err)
	}
	// Split model.safetensors into two shards plus an index.
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var s1, s2 []safetensors.Tensor
	index := map[string]string{}
	for i, n := range f.Names() {
		data, shape, _ := f.Float32(n)
		ts := safetensors.Tensor{Name: n, Shape: shape, Data: data}
		if i%2 == 0 {
			s1, index[n] = append(s1, ts), "model-00001-of-00002.safetensors"
		} else {
			s2, index[n] = append(s2, ts), "model-00002-of-00002.safetensors"
		}
	}
	os.Remove(filepath.Join(dir, "model.safetensors"))
	safetensors.Write(filepath.Join(dir, "model-00001-of-00002.safetensors"), s1, nil)
	safetensors.Write(filepath.Join(dir, "model-00002-of-00002.safetensors"), s2, nil)
	b, _ := json.Marshal(map[string]any{"weight_map": index})
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), b, 0o644)
	store2 := model.NewStore()
	if _, err := LoadHF(store2.RootScope(), dir); err != nil {
		t.Fatal(err)
	}
	a, c := encodeAll(t, store, cfg), encodeAll(t, store2, cfg)
	for i := range a {
		if a[i] != c[i] {
			t.Fatal("sharded load differs")
		}
	}
}

func TestLoadErrors(t *testing.T) {
	cfg := tinyConfig()
	store := initTiny(t, cfg)
	base := t.TempDir()
	if err := SaveHF(store.RootScope(), cfg, base, true); err != nil {
		t.Fatal(err)
	}
	f, _ := safetensors.Open(filepath.Join(base, "model.safetensors"))
	rewrite := func(t *testing.T, edit func(name string, ts *safetensors.Tensor) bool) string {
		dir := t.TempDir()
		var out []safetensors.Tensor
		for _, n := range f.Names() {
			data, shape, _ := f.Float32(n)
			ts := safetensors.Tensor{Name: n, Shape: shape, Data: data}
			if edit(n, &ts) {
				out = append(out, ts)
			}
		}
		if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), out, nil); err != nil {
			t.Fatal(err)
		}
		cfgb, _ := os.ReadFile(filepath.Join(base, "config.json"))
		os.WriteFile(filepath.Join(dir, "config.json"), cfgb, 0o644)
		return dir
	}
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
		want string
	}{
		{"missing tensor", func(t *testing.T) string {
			return rewrite(t, func(n string, _ *safetensors.Tensor) bool { return n != "bert.encoder.layer.1.output.dense.bias" })
		}, `missing tensor "encoder.layer.1.output.dense.bias"`},
		{"shape disagrees with config", func(t *testing.T) string {
			return rewrite(t, func(n string, ts *safetensors.Tensor) bool {
				if n == "bert.encoder.layer.0.intermediate.dense.bias" {
					ts.Shape, ts.Data = []int{15}, ts.Data[:15]
				}
				return true
			})
		}, `"bert.encoder.layer.0.intermediate.dense.bias" has shape [15], config.json implies [16]`},
		{"truncated file", func(t *testing.T) string {
			dir := rewrite(t, func(string, *safetensors.Tensor) bool { return true })
			p := filepath.Join(dir, "model.safetensors")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-10], 0o644)
			return dir
		}, "truncated file?"},
		{"bad config", func(t *testing.T) string {
			dir := rewrite(t, func(string, *safetensors.Tensor) bool { return true })
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"hidden_size": 10, "num_attention_heads": 3}`), 0o644)
			return dir
		}, "not a multiple of num_attention_heads"},
		{"no weights", func(t *testing.T) string {
			dir := t.TempDir()
			cfgb, _ := os.ReadFile(filepath.Join(base, "config.json"))
			os.WriteFile(filepath.Join(dir, "config.json"), cfgb, 0o644)
			return dir
		}, "neither model.safetensors nor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := model.NewStore()
			_, err := LoadHF(st.RootScope(), tc.dir(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if st.NumVariables() != 0 {
				t.Fatalf("a failed load created %d variables: must not half-load", st.NumVariables())
			}
		})
	}
}

// TestGradientCheck compares autodiff gradients of a scalar function of the encoder output
// (mean and pooler poolings, padded batch) with central finite differences, on a tiny model
// computed in float64.
func TestGradientCheck(t *testing.T) {
	cfg := tinyConfig()
	cfg.DType = dtypes.Float64
	cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb = 0, 0
	cfg.InitializerRange = 0.5 // large weights: attention far from uniform
	store := initTiny(t, cfg)
	be, _ := backend.Open("go")
	ids := tensors.FromFlatDataAndDimensions([]int32{1, 5, 7, 2, 1, 9, 2, 0}, 2, 4)
	types := tensors.FromFlatDataAndDimensions([]int32{0, 0, 1, 1, 0, 0, 0, 0}, 2, 4)
	mask := tensors.FromFlatDataAndDimensions([]int32{1, 1, 1, 1, 1, 1, 1, 0}, 2, 4)
	rng := rand.New(rand.NewPCG(3, 4))
	proj := make([]float64, 4*cfg.HiddenSize)
	for i := range proj {
		proj[i] = rng.NormFloat64()
	}
	checked := []string{
		"/embeddings/word_embeddings/weight", "/embeddings/position_embeddings/weight",
		"/embeddings/LayerNorm/weight", "/encoder/layer/0/attention/self/query/weight",
		"/encoder/layer/0/attention/self/key/bias", "/encoder/layer/0/attention/self/value/weight",
		"/encoder/layer/1/intermediate/dense/weight", "/encoder/layer/1/output/LayerNorm/bias",
		"/pooler/dense/weight",
	}
	loss := func(s *model.Scope, ids, types, mask *Node) *Node {
		h := Encode(s, cfg, ids, types, mask)
		p := Concatenate([]*Node{Pool(s, cfg, h, mask, PoolMean), Pool(s, cfg, h, mask, PoolPooler)}, 0)
		w := Const(ids.Graph(), tensors.FromFlatDataAndDimensions(proj, 4, cfg.HiddenSize))
		return ReduceAllSum(Mul(Sin(p), w))
	}
	gradExec, err := model.NewExec(be, store, func(s *model.Scope, ids, types, mask *Node) []*Node {
		l := loss(s, ids, types, mask)
		var vs []*Node
		for _, p := range checked {
			vs = append(vs, store.GetVariable(p).NodeValue(l.Graph()))
		}
		return Gradient(l, vs...)
	})
	if err != nil {
		t.Fatal(err)
	}
	grads, err := gradExec.Call(ids, types, mask)
	if err != nil {
		t.Fatal(err)
	}
	// Inference graphs embed variable values as constants (backends with
	// PreferConstantsForVariables), so each perturbed evaluation builds a fresh Exec.
	eval := func() float64 {
		lossExec, err := model.NewExec(be, store, loss)
		if err != nil {
			t.Fatal(err)
		}
		v, err := lossExec.Call1(ids, types, mask)
		if err != nil {
			t.Fatal(err)
		}
		return v.Value().(float64)
	}
	const eps = 1e-5
	for vi, p := range checked {
		v := store.GetVariable(p)
		orig := tensors.MustCopyFlatData[float64](v.MustValue())
		g := tensors.MustCopyFlatData[float64](grads[vi])
		// The 2 largest gradients and one random entry (possibly a zero gradient, e.g. an
		// unused vocabulary row: finite differences must agree it is zero).
		for _, i := range append(largest(g, 2), rng.IntN(len(g))) {
			set := func(x float64) {
				c := append([]float64(nil), orig...)
				c[i] = x
				v.MustSetValue(tensors.FromFlatDataAndDimensions(c, v.Shape().Dimensions...))
			}
			set(orig[i] + eps)
			up := eval()
			set(orig[i] - eps)
			down := eval()
			set(orig[i])
			fd := (up - down) / (2 * eps)
			rel := abs(fd-g[i]) / max(abs(fd)+abs(g[i]), 1e-3) // floor: exact zeros (key bias)
			t.Logf("%s[%d]: autodiff %.9f finite-diff %.9f rel %.1e", p, i, g[i], fd, rel)
			if rel > 1e-5 {
				t.Errorf("%s[%d]: autodiff %v vs finite differences %v (relative error %.2e)", p, i, g[i], fd, rel)
			}
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// largest returns the indices of the n entries of g with the largest magnitude.
func largest(g []float64, n int) []int {
	idx := make([]int, len(g))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return abs(g[idx[a]]) > abs(g[idx[b]]) })
	return idx[:min(n, len(idx))]
}

// TestDropoutTrainingOnly checks dropout changes outputs in training graphs only, and that a
// training graph with zero dropout equals inference.
func TestDropoutTrainingOnly(t *testing.T) {
	for _, tc := range []struct {
		name         string
		hidden, attn float64
		differ       bool
	}{
		{"no dropout", 0, 0, false},
		{"hidden dropout", 0.1, 0, true},
		{"attention dropout", 0, 0.3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb = tc.hidden, tc.attn
			store := initTiny(t, cfg)
			be, _ := backend.Open("go")
			exec, err := model.NewExec(be, store, func(s *model.Scope, ids, types, mask *Node) *Node {
				s.SetTraining(ids.Graph(), true)
				return Encode(s, cfg, ids, types, mask)
			})
			if err != nil {
				t.Fatal(err)
			}
			ids := tensors.FromFlatDataAndDimensions([]int32{1, 5, 7, 2, 1, 9, 2, 0}, 2, 4)
			types := tensors.FromFlatDataAndDimensions(make([]int32, 8), 2, 4)
			mask := tensors.FromFlatDataAndDimensions([]int32{1, 1, 1, 1, 1, 1, 1, 0}, 2, 4)
			train, err := exec.Call1(ids, types, mask)
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewRunner(be, store, "", cfg, PoolNone)
			if err != nil {
				t.Fatal(err)
			}
			infer, err := r.Run([][]int32{{1, 5, 7, 2}, {1, 9, 2, 0}}, [][]int32{make([]int32, 4), make([]int32, 4)}, [][]int32{{1, 1, 1, 1}, {1, 1, 1, 0}})
			if err != nil {
				t.Fatal(err)
			}
			a, b := tensors.MustCopyFlatData[float32](train), tensors.MustCopyFlatData[float32](infer)
			diff := 0.0
			for i := range a {
				diff = max(diff, abs(float64(a[i]-b[i])))
			}
			if (diff > 1e-6) != tc.differ {
				t.Fatalf("training vs inference max difference %.2e, want differ=%v", diff, tc.differ)
			}
		})
	}
}
