package deberta

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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

// TestBucket pins HF's log-bucket table (256 buckets, 512 positions) up to distance 512.
func TestBucket(t *testing.T) {
	for _, tc := range []struct{ d, want int }{
		{0, 0}, {1, 1}, {127, 127}, {128, 128}, {129, 129}, {130, 130}, {131, 131}, {150, 143},
		{200, 169}, {256, 192}, {300, 207}, {400, 233}, {510, 255}, {511, 255}, {512, 256},
	} {
		if got := Bucket(tc.d, 256, 512); got != tc.want {
			t.Errorf("Bucket(%d) = %d, want %d", tc.d, got, tc.want)
		}
		if got := Bucket(-tc.d, 256, 512); got != -tc.want {
			t.Errorf("Bucket(%d) = %d, want %d", -tc.d, got, -tc.want)
		}
	}
	// Monotone steps of at most one bucket.
	prev := 0
	for d := 1; d <= 512; d++ {
		b := Bucket(d, 256, 512)
		if b < prev || b > prev+1 {
			t.Fatalf("Bucket(%d) = %d after %d: not a monotone step", d, b, prev)
		}
		prev = b
	}
	// Without buckets the relative position is the distance itself.
	if Bucket(-300, -1, 512) != -300 || Bucket(40, 0, 24) != 40 {
		t.Error("no buckets: want the distance unchanged")
	}
	// 8 buckets over 32 positions (the buckets8 fixture's table is checked in the parity test).
	for d, want := range map[int]int{4: 4, 5: 5, 8: 6, 12: 6, 31: 7, 40: 8} {
		if got := Bucket(d, 8, 32); got != want {
			t.Errorf("Bucket(%d, 8, 32) = %d, want %d", d, got, want)
		}
	}
}

func TestConfigJSON(t *testing.T) {
	// deberta-v3-base's config.json: string pos_att_type, absent fields take HF defaults.
	const v3 = `{"model_type": "deberta-v2", "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
	  "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
	  "max_position_embeddings": 512, "relative_attention": true, "position_buckets": 256,
	  "norm_rel_ebd": "layer_norm", "share_att_key": true, "pos_att_type": "p2c|c2p", "layer_norm_eps": 1e-7,
	  "max_relative_positions": -1, "position_biased_input": false, "num_attention_heads": 12,
	  "num_hidden_layers": 12, "type_vocab_size": 0, "vocab_size": 128100}`
	var c Config
	if err := json.Unmarshal([]byte(v3), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.PosAttType, []string{"p2c", "c2p"}) || c.Span() != 256 || c.MaxRelative() != 512 ||
		c.PoolerHiddenAct != "gelu" || c.Embedding() != 768 || !c.normRel() || c.scaleFactor() != 3 {
		t.Errorf("parsed %+v", c)
	}
	// Written back: a list, HF field names, model_type.
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"relative_attention", "position_buckets", "max_relative_positions", "share_att_key",
		"norm_rel_ebd", "position_biased_input", "pooler_hidden_act", "pooler_dropout", "layer_norm_eps", "type_vocab_size"} {
		if _, ok := m[k]; !ok {
			t.Errorf("marshalled config lacks %q: %s", k, b)
		}
	}
	if l, ok := m["pos_att_type"].([]any); !ok || len(l) != 2 || l[0] != "p2c" {
		t.Errorf("pos_att_type written as %v", m["pos_att_type"])
	}
	// HF defaults for absent fields: DebertaV2Config(), not the v3 values.
	var d Config
	if err := json.Unmarshal([]byte(`{"hidden_size": 64, "num_attention_heads": 4}`), &d); err != nil {
		t.Fatal(err)
	}
	if !d.PositionBiasedInput || d.RelativeAttention || d.PositionBuckets != -1 || d.LayerNormEps != 1e-7 || d.NormRelEbd != "none" || d.PosAttType != nil {
		t.Errorf("defaults %+v", d)
	}
	// Default is v3-like.
	def := Default()
	if err := def.Validate(); err != nil || !def.RelativeAttention || def.PositionBiasedInput || def.Span() != 256 || !def.ShareAttKey ||
		def.TypeVocabSize != 0 || def.LayerNormEps != 1e-7 || !slices.Equal(def.PosAttType, []string{"p2c", "c2p"}) || !def.normRel() {
		t.Errorf("Default() = %+v (%v)", def, err)
	}
	if err := json.Unmarshal([]byte(`{"pos_att_type": 3}`), &d); err == nil || !strings.Contains(err.Error(), "pos_att_type") {
		t.Errorf("bad pos_att_type: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		edit func(c *Config)
		want string
	}{
		{func(c *Config) { c.NumAttentionHeads = 5 }, "not a multiple"},
		{func(c *Config) { c.PosAttType = AttTypes{"c2p", "p2p"} }, "pos_att_type"},
		{func(c *Config) { c.PosAttType = AttTypes{"c2p", "c2p"} }, "pos_att_type"},
		{func(c *Config) { c.NormRelEbd = "batch_norm" }, "norm_rel_ebd"},
		{func(c *Config) { c.ConvKernelSize = 3 }, "ConvLayer"},
		{func(c *Config) { c.AttentionHeadSize = 7 }, "attention_head_size"},
		{func(c *Config) { c.PoolerHiddenSize = 10 }, "pooler_hidden_size"},
		{func(c *Config) { c.PositionBuckets, c.MaxPositionEmbeddings = 256, 128 }, "position_buckets"},
		{func(c *Config) { c.PositionBuckets = 1 }, "position_buckets"},
		{func(c *Config) { c.HiddenAct = "swish" }, "hidden_act"},
		{func(c *Config) { c.PoolerHiddenAct = "softmax" }, "pooler_hidden_act"},
		{func(c *Config) { c.PoolerDropout = 1 }, "dropout"},
		{func(c *Config) { c.TypeVocabSize = -1 }, "type_vocab_size"},
		{func(c *Config) { c.LayerNormEps = 0 }, "layer_norm_eps"},
		{func(c *Config) { c.PadTokenID = 40 }, "pad_token_id"},
		{func(c *Config) { c.DType = dtypes.Int32 }, "dtype"},
	} {
		c := tinyConfig()
		tc.edit(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v", tc.want, err)
		}
	}
	if err := tinyConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

// tinyConfig is a v3-like config small enough for gradient checks: 4 buckets over 8
// relative positions, so sequences of 6 reach the log buckets and the clamp.
func tinyConfig() *Config {
	c := Default()
	c.VocabSize, c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize = 40, 8, 2, 2, 16
	c.MaxPositionEmbeddings, c.PositionBuckets, c.MaxRelativePositions = 16, 4, 8
	return c
}

func initTiny(t *testing.T, cfg *Config, seed uint64) *model.Store {
	t.Helper()
	store := model.NewStore()
	if err := Init(store.RootScope(), cfg, seed); err != nil {
		t.Fatal(err)
	}
	return store
}

var (
	tinyIDs   = [][]int32{{1, 5, 7, 9, 11, 2}, {1, 9, 2, 0, 0, 0}}
	tinyTypes = [][]int32{{0, 0, 0, 1, 1, 1}, {0, 0, 0, 0, 0, 0}}
	tinyMask  = [][]int32{{1, 1, 1, 1, 1, 1}, {1, 1, 1, 0, 0, 0}}
)

func TestInit(t *testing.T) {
	cfg := tinyConfig()
	cfg.PadTokenID = 3
	a, b, c := initTiny(t, cfg, 1), initTiny(t, cfg, 1), initTiny(t, cfg, 2)
	if n := a.NumVariables(); n != len(Params(cfg)) {
		t.Fatalf("%d variables, want %d", n, len(Params(cfg)))
	}
	get := func(s *model.Store, p string) []float32 {
		return tensors.MustCopyFlatData[float32](s.GetVariable(p).MustValue())
	}
	for i, v := range get(a, "/embeddings/word_embeddings/weight") {
		if (i/cfg.HiddenSize == 3) != (v == 0) {
			t.Fatalf("word embedding %d = %v: want the pad row (3) zero and only it", i, v)
		}
	}
	if w := get(a, "/encoder/LayerNorm/weight"); w[0] != 1 {
		t.Error("rel LayerNorm weight not 1")
	}
	same, other := get(b, "/encoder/rel_embeddings/weight"), get(c, "/encoder/rel_embeddings/weight")
	for i, v := range get(a, "/encoder/rel_embeddings/weight") {
		if v != same[i] || v == other[i] {
			t.Fatal("Init must depend on the seed, and only on it")
		}
	}
}

// TestParams checks which parameters each option brings.
func TestParams(t *testing.T) {
	names := func(c *Config) map[string][]int {
		m := map[string][]int{}
		for _, p := range Params(c) {
			m[p.Name] = p.Shape
		}
		return m
	}
	c := tinyConfig()
	m := names(c)
	if s := m["encoder.rel_embeddings.weight"]; !slices.Equal(s, []int{8, 8}) {
		t.Errorf("rel_embeddings %v, want [2·4 buckets, 8]", s)
	}
	for _, n := range []string{"embeddings.position_embeddings.weight", "embeddings.token_type_embeddings.weight",
		"embeddings.embed_proj.weight", "encoder.layer.0.attention.self.pos_key_proj.weight"} {
		if _, ok := m[n]; ok {
			t.Errorf("v3-like config has %s", n)
		}
	}
	c.ShareAttKey, c.PosAttType, c.EmbeddingSize, c.TypeVocabSize, c.PositionBiasedInput = false, AttTypes{"c2p"}, 4, 2, true
	c.PositionBuckets, c.NormRelEbd = -1, "none"
	m = names(c)
	for n, s := range map[string][]int{"embeddings.word_embeddings.weight": {40, 4}, "embeddings.embed_proj.weight": {8, 4},
		"embeddings.position_embeddings.weight": {16, 4}, "embeddings.token_type_embeddings.weight": {2, 4},
		"encoder.layer.1.attention.self.pos_key_proj.bias": {8}, "encoder.rel_embeddings.weight": {16, 8}} {
		if !slices.Equal(m[n], s) {
			t.Errorf("%s: shape %v, want %v", n, m[n], s)
		}
	}
	for _, n := range []string{"encoder.layer.0.attention.self.pos_query_proj.weight", "encoder.LayerNorm.weight"} {
		if _, ok := m[n]; ok {
			t.Errorf("has %s", n)
		}
	}
}

// TestTypesIgnoredWithoutTypeVocab checks token types do not matter when type_vocab_size is 0
// and do when it is 2.
func TestTypesIgnoredWithoutTypeVocab(t *testing.T) {
	be, _ := backend.Open("go")
	zeros := [][]int32{make([]int32, 6), make([]int32, 6)}
	for _, tv := range []int{0, 2} {
		cfg := tinyConfig()
		cfg.TypeVocabSize = tv
		store := initTiny(t, cfg, 1)
		a := run(t, be, store, cfg, PoolMean, tinyIDs, tinyTypes, tinyMask)
		b := run(t, be, store, cfg, PoolMean, tinyIDs, zeros, tinyMask)
		if same := slices.Equal(a, b); same != (tv == 0) {
			t.Errorf("type_vocab_size %d: outputs with and without types equal = %v", tv, same)
		}
	}
}

// TestGradientCheck compares autodiff gradients through the disentangled attention with
// central finite differences, in float64, for a v3-like config (shared keys, both terms,
// rel LayerNorm) and one with separate position projections, embed_proj, absolute positions,
// token types and no buckets.
//
// With GOEXPERIMENT=simd the go backend's GELU evaluates erf with a polynomial approximation
// (|error| < 1.5e-7) while its gradient uses the exact erf derivative, so finite differences
// of a GELU network differ from autodiff by up to ~1e-4 relative on small gradients whatever
// the attention does (measured 5.5e-6 here). The attention is therefore checked to 1e-6 with
// relu/tanh activations, and the GELU network (the real configuration) to 1e-4.
func TestGradientCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(c *Config)
		tol     float64
		checked []string
	}{
		{"v3", relu, 1e-6, v3Vars},
		{"v3 gelu", func(c *Config) {}, 1e-4, v3Vars},
		{"separate", func(c *Config) {
			relu(c)
			c.ShareAttKey, c.EmbeddingSize, c.TypeVocabSize, c.PositionBiasedInput = false, 4, 2, true
			c.PositionBuckets, c.MaxRelativePositions, c.NormRelEbd = -1, 3, "none"
		}, 1e-6, []string{
			"/encoder/rel_embeddings/weight", "/encoder/layer/0/attention/self/pos_key_proj/weight",
			"/encoder/layer/0/attention/self/pos_query_proj/weight", "/encoder/layer/1/attention/self/pos_query_proj/bias",
			"/encoder/layer/0/attention/self/key_proj/bias", "/embeddings/embed_proj/weight",
			"/embeddings/position_embeddings/weight", "/embeddings/token_type_embeddings/weight"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			tc.edit(cfg)
			cfg.DType = dtypes.Float64
			cfg.InitializerRange = 0.5 // large weights: attention far from uniform
			store := initTiny(t, cfg, 7)
			gradientCheck(t, store, cfg, tc.checked, tc.tol)
		})
	}
}

var v3Vars = []string{
	"/encoder/rel_embeddings/weight", "/encoder/LayerNorm/weight", "/encoder/LayerNorm/bias",
	"/encoder/layer/0/attention/self/query_proj/weight", "/encoder/layer/0/attention/self/key_proj/weight",
	"/encoder/layer/0/attention/self/key_proj/bias", "/encoder/layer/1/attention/self/query_proj/bias",
	"/encoder/layer/1/attention/self/value_proj/weight", "/embeddings/word_embeddings/weight",
	"/embeddings/LayerNorm/weight", "/encoder/layer/1/intermediate/dense/weight", "/pooler/dense/weight"}

func relu(c *Config) { c.HiddenAct, c.PoolerHiddenAct = "relu", "tanh" }

func gradientCheck(t *testing.T, store *model.Store, cfg *Config, checked []string, tol float64) {
	be, _ := backend.Open("go")
	flat := func(x [][]int32) *tensors.Tensor {
		var d []int32
		for _, r := range x {
			d = append(d, r...)
		}
		return tensors.FromFlatDataAndDimensions(d, len(x), len(x[0]))
	}
	ids, types, mask := flat(tinyIDs), flat(tinyTypes), flat(tinyMask)
	rng := rand.New(rand.NewPCG(3, 4))
	h := cfg.HiddenSize
	proj := make([]float64, 4*h)
	for i := range proj {
		proj[i] = rng.NormFloat64()
	}
	// A scalar of every token's state (mean pooling) and of the ContextPooler.
	loss := func(s *model.Scope, ids, types, mask *Node) *Node {
		x := Encode(s, cfg, ids, types, mask)
		p := Concatenate([]*Node{Pool(s, cfg, x, mask, PoolMean), Pool(s, cfg, x, mask, PoolPooler)}, 0)
		w := Const(ids.Graph(), tensors.FromFlatDataAndDimensions(proj, 4, h))
		return ReduceAllSum(Mul(Sin(p), w))
	}
	gradExec, err := model.NewExec(be, store, func(s *model.Scope, ids, types, mask *Node) []*Node {
		l := loss(s, ids, types, mask)
		var vs []*Node
		for _, p := range checked {
			v := store.GetVariable(p)
			if v == nil {
				t.Fatalf("no variable %s", p)
			}
			vs = append(vs, v.NodeValue(l.Graph()))
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
	// Inference graphs may embed variable values as constants, so each perturbed evaluation
	// builds a fresh Exec.
	eval := func() float64 {
		e, err := model.NewExec(be, store, loss)
		if err != nil {
			t.Fatal(err)
		}
		v, err := e.Call1(ids, types, mask)
		if err != nil {
			t.Fatal(err)
		}
		return v.Value().(float64)
	}
	const eps = 1e-5
	worst := 0.0
	for vi, p := range checked {
		v := store.GetVariable(p)
		orig := tensors.MustCopyFlatData[float64](v.MustValue())
		g := tensors.MustCopyFlatData[float64](grads[vi])
		// The 2 largest gradients and one random entry.
		for _, i := range append(largest(g, 2), rng.IntN(len(g))) {
			set := func(x float64) {
				c := slices.Clone(orig)
				c[i] = x
				v.MustSetValue(tensors.FromFlatDataAndDimensions(c, v.Shape().Dimensions...))
			}
			set(orig[i] + eps)
			up := eval()
			set(orig[i] - eps)
			down := eval()
			set(orig[i])
			fd := (up - down) / (2 * eps)
			rel := math.Abs(fd-g[i]) / max(math.Abs(fd)+math.Abs(g[i]), 1e-3)
			worst = max(worst, rel)
			if rel > tol {
				t.Errorf("%s[%d]: autodiff %v vs finite differences %v (relative error %.2e)", p, i, g[i], fd, rel)
			}
		}
		if largest(g, 1) == nil || math.Abs(g[largest(g, 1)[0]]) == 0 {
			t.Errorf("%s: all gradients zero: the check would not test it", p)
		}
	}
	t.Logf("%d variables, 3 entries each: max relative error autodiff vs finite differences %.2e", len(checked), worst)
}

// largest returns the indices of the n entries of g with the largest magnitude.
func largest(g []float64, n int) []int {
	idx := make([]int, len(g))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return math.Abs(g[idx[a]]) > math.Abs(g[idx[b]]) })
	return idx[:min(n, len(idx))]
}

// TestDropoutTrainingOnly checks each dropout changes outputs in training graphs only, and
// that a training graph with zero dropout equals inference.
func TestDropoutTrainingOnly(t *testing.T) {
	be, _ := backend.Open("go")
	for _, tc := range []struct {
		name                 string
		hidden, attn, pooler float64
		differ               bool
	}{
		{"no dropout", 0, 0, 0, false},
		{"hidden dropout", 0.1, 0, 0, true},
		{"attention dropout", 0, 0.3, 0, true},
		{"pooler dropout", 0, 0, 0.3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb, cfg.PoolerDropout = tc.hidden, tc.attn, tc.pooler
			store := initTiny(t, cfg, 1)
			exec, err := model.NewExec(be, store, func(s *model.Scope, ids, types, mask *Node) *Node {
				s.SetTraining(ids.Graph(), true)
				return Pool(s, cfg, Encode(s, cfg, ids, types, mask), mask, PoolPooler)
			})
			if err != nil {
				t.Fatal(err)
			}
			ids := tensors.FromFlatDataAndDimensions(slices.Concat(tinyIDs...), 2, 6)
			types := tensors.FromFlatDataAndDimensions(slices.Concat(tinyTypes...), 2, 6)
			mask := tensors.FromFlatDataAndDimensions(slices.Concat(tinyMask...), 2, 6)
			train, err := exec.Call1(ids, types, mask)
			if err != nil {
				t.Fatal(err)
			}
			a := tensors.MustCopyFlatData[float32](train)
			b := run(t, be, store, cfg, PoolPooler, tinyIDs, tinyTypes, tinyMask)
			diff := 0.0
			for i := range a {
				diff = max(diff, math.Abs(float64(a[i]-b[i])))
			}
			if (diff > 1e-6) != tc.differ {
				t.Fatalf("training vs inference max difference %.2e, want differ=%v", diff, tc.differ)
			}
		})
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	be, _ := backend.Open("go")
	for _, prefix := range []bool{false, true} {
		cfg := tinyConfig()
		cfg.EmbeddingSize, cfg.TypeVocabSize = 4, 2
		store := initTiny(t, cfg, 5)
		dir := t.TempDir()
		if err := SaveHF(store.RootScope(), cfg, dir, prefix); err != nil {
			t.Fatal(err)
		}
		f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		wantName := "encoder.rel_embeddings.weight"
		if prefix {
			wantName = "deberta." + wantName
		}
		if names := f.Names(); !slices.Contains(names, wantName) || !slices.Contains(names, "pooler.dense.weight") {
			t.Errorf("prefix %v: tensors %v lack %s or the unprefixed pooler.dense.weight", prefix, names, wantName)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
		var m map[string]any
		json.Unmarshal(b, &m)
		if m["model_type"] != "deberta-v2" || m["position_buckets"] != 4.0 || m["embedding_size"] != 4.0 {
			t.Errorf("config.json: %s", b)
		}
		store2 := model.NewStore()
		cfg2, err := LoadHF(store2.RootScope(), dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []Pooling{PoolNone, PoolPooler} {
			a := run(t, be, store, cfg, p, tinyIDs, tinyTypes, tinyMask)
			c := run(t, be, store2, cfg2, p, tinyIDs, tinyTypes, tinyMask)
			if !slices.Equal(a, c) {
				t.Fatalf("prefix %v, pooling %s: reloaded model differs", prefix, p)
			}
		}
	}

	// The PyTorch fixture saved by toolret and read back still matches PyTorch exactly as the
	// first load did.
	f := loadFixture(t, "buckets8")
	store := model.NewStore()
	cfg, _ := f.load(t, store)
	dir := t.TempDir()
	if err := SaveHF(store.RootScope(), cfg, dir, true); err != nil {
		t.Fatal(err)
	}
	store2 := model.NewStore()
	cfg2, err := LoadHF(store2.RootScope(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg2.HasPooler() || cfg2.PositionBuckets != 8 || cfg2.MaxRelativePositions != 32 || !slices.Equal(cfg2.PosAttType, []string{"c2p"}) {
		t.Errorf("reloaded config %+v", cfg2)
	}
	a := run(t, be, store, cfg, PoolNone, f.IDs, f.Types, f.Mask)
	b := run(t, be, store2, cfg2, PoolNone, f.IDs, f.Types, f.Mask)
	if !slices.Equal(a, b) {
		t.Fatal("fixture saved and reloaded gives different outputs")
	}
}

func TestLoadErrors(t *testing.T) {
	cfg := tinyConfig()
	store := initTiny(t, cfg, 1)
	base := t.TempDir()
	if err := SaveHF(store.RootScope(), cfg, base, true); err != nil {
		t.Fatal(err)
	}
	f, _ := safetensors.Open(filepath.Join(base, "model.safetensors"))
	cfgb, _ := os.ReadFile(filepath.Join(base, "config.json"))
	rewrite := func(t *testing.T, edit func(name string, ts *safetensors.Tensor) bool, extra ...safetensors.Tensor) string {
		dir := t.TempDir()
		var out []safetensors.Tensor
		for _, n := range f.Names() {
			data, shape, _ := f.Float32(n)
			ts := safetensors.Tensor{Name: n, Shape: shape, Data: data}
			if edit(n, &ts) {
				out = append(out, ts)
			}
		}
		if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), append(out, extra...), nil); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "config.json"), cfgb, 0o644)
		return dir
	}
	keep := func(string, *safetensors.Tensor) bool { return true }
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
		want string
	}{
		{"missing tensor", func(t *testing.T) string {
			return rewrite(t, func(n string, _ *safetensors.Tensor) bool { return n != "deberta.encoder.rel_embeddings.weight" })
		}, `missing tensor "encoder.rel_embeddings.weight"`},
		{"missing rel LayerNorm", func(t *testing.T) string {
			return rewrite(t, func(n string, _ *safetensors.Tensor) bool { return n != "deberta.encoder.LayerNorm.bias" })
		}, `missing tensor "encoder.LayerNorm.bias"`},
		{"shape disagrees with config", func(t *testing.T) string {
			return rewrite(t, func(n string, ts *safetensors.Tensor) bool {
				if n == "deberta.encoder.rel_embeddings.weight" {
					ts.Shape, ts.Data = []int{4, 8}, ts.Data[:32]
				}
				return true
			})
		}, `"deberta.encoder.rel_embeddings.weight" has shape [4 8], config.json implies [8 8]`},
		{"encoder tensor the config does not have", func(t *testing.T) string {
			return rewrite(t, keep, safetensors.Tensor{Name: "deberta.encoder.layer.0.attention.self.pos_key_proj.weight", Shape: []int{8, 8}, Data: make([]float32, 64)})
		}, `"encoder.layer.0.attention.self.pos_key_proj.weight" is not a parameter`},
		{"duplicate with and without prefix", func(t *testing.T) string {
			return rewrite(t, keep, safetensors.Tensor{Name: "encoder.LayerNorm.bias", Shape: []int{8}, Data: make([]float32, 8)})
		}, `"encoder.LayerNorm.bias" appears twice`},
		{"unsupported config", func(t *testing.T) string {
			dir := rewrite(t, keep)
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "deberta-v2", "conv_kernel_size": 3}`), 0o644)
			return dir
		}, "ConvLayer"},
		{"other model_type", func(t *testing.T) string {
			dir := rewrite(t, keep)
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "deberta"}`), 0o644)
			return dir
		}, `model_type "deberta"`},
		{"no weights", func(t *testing.T) string {
			dir := t.TempDir()
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

// TestLoadSharded loads a checkpoint split into shards with an index.
func TestLoadSharded(t *testing.T) {
	cfg := tinyConfig()
	store := initTiny(t, cfg, 1)
	dir := t.TempDir()
	if err := SaveHF(store.RootScope(), cfg, dir, true); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	shards := [2][]safetensors.Tensor{}
	index := map[string]string{}
	for i, n := range f.Names() {
		data, shape, _ := f.Float32(n)
		shards[i%2] = append(shards[i%2], safetensors.Tensor{Name: n, Shape: shape, Data: data})
		index[n] = []string{"a.safetensors", "b.safetensors"}[i%2]
	}
	os.Remove(filepath.Join(dir, "model.safetensors"))
	for i, name := range []string{"a.safetensors", "b.safetensors"} {
		if err := safetensors.Write(filepath.Join(dir, name), shards[i], nil); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(map[string]any{"weight_map": index})
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), b, 0o644)
	store2 := model.NewStore()
	cfg2, err := LoadHF(store2.RootScope(), dir)
	if err != nil {
		t.Fatal(err)
	}
	be, _ := backend.Open("go")
	if !slices.Equal(run(t, be, store, cfg, PoolMean, tinyIDs, tinyTypes, tinyMask), run(t, be, store2, cfg2, PoolMean, tinyIDs, tinyTypes, tinyMask)) {
		t.Fatal("sharded load differs")
	}
}
