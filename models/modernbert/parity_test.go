package modernbert

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/internal/paritytest"
	"github.com/toolret/toolret/models/pooling"
	"github.com/toolret/toolret/tokenize"
)

// fixtureDir is the tiny ModernBERT of scripts/parity/make_modernbert_fixture.py, laid out as
// sentence-transformers saves modernbert-embed (Transformer + mean Pooling, tokenizer.json).
const fixtureDir = "testdata/tiny"

// biasDir is the same network with norm_bias, attention_bias and mlp_bias (HF directory).
const biasDir = "testdata/tiny-bias"

type expected struct {
	Texts      []string    `json:"texts"`
	MaxSeq     int         `json:"max_seq_length"`
	IDs        [][]int32   `json:"ids"`
	LayerTypes []string    `json:"layer_types"`
	Emb        [][]float64 `json:"embeddings"`
	CLS        [][]float64 `json:"cls"`
	BatchIDs   [][]int32   `json:"batch_ids"`
	BatchMask  [][]int32   `json:"batch_mask"`
	Shape      []int       `json:"hidden_shape"`
	Hidden     []float64   `json:"last_hidden_state"`
	BiasHidden []float64   `json:"bias_last_hidden_state"`
}

// parityTol bounds max |toolret - transformers| on the fixture (float32), as issue 56 asks.
const parityTol = 1e-5

// TestTokenizerParity: the byte-level BPE tokenizer of the fixture gives sentence-transformers'
// ids exactly, truncated to max_seq_length.
func TestTokenizerParity(t *testing.T) {
	e := paritytest.Expected[expected](t)
	tok, err := tokenize.Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range e.Texts {
		if got := tok.Single(text, e.MaxSeq); !slices.Equal(got, e.IDs[i]) {
			t.Errorf("text %d %q: ids %v, sentence-transformers %v", i, text, got, e.IDs[i])
		}
	}
	if tok.Token(tok.CLSID()) != "[CLS]" || tok.Token(tok.SEPID()) != "[SEP]" || tok.Token(tok.PadID()) != "[PAD]" {
		t.Errorf("specials cls %d sep %d pad %d", tok.CLSID(), tok.SEPID(), tok.PadID())
	}
}

// checkParity loads dir on backendName and compares the last hidden states of the padded batch
// with transformers' ModernBertModel (want), and for the mean-pooled fixture each text's
// embedding, alone and in the batch, with sentence-transformers, and the CLS states
// (gte-modernbert's pooling). It returns the embeddings of the texts alone.
func checkParity(t *testing.T, backendName, dir string, want []float64, st bool) [][]float32 {
	be, err := backend.Open(backendName)
	if err != nil {
		t.Skipf("backend %s: %v", backendName, err)
	}
	e := paritytest.Expected[expected](t)
	store := model.NewStore()
	cfg, err := LoadHF(store.RootScope(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for l, typ := range e.LayerTypes {
		if cfg.IsGlobal(l) != (typ == FullAttention) {
			t.Fatalf("layer %d: global %v, transformers %s", l, cfg.IsGlobal(l), typ)
		}
	}
	exec, err := model.NewExec(be, store, func(root *model.Scope, ids, mask *Node) []*Node {
		h := Encode(root, cfg, ids, mask)
		return []*Node{h, Pool(h, mask, pooling.Mean), Pool(h, mask, pooling.CLS)}
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Exec(paritytest.Flat(e.BatchIDs), paritytest.Flat(e.BatchMask))
	if err != nil {
		t.Fatal(err)
	}
	// Every state, padding included (a padding query attends as in HF).
	d := paritytest.MaxDiff(tensors.MustCopyFlatData[float32](out[0]), want)
	t.Logf("%s %s: padded batch, last_hidden_state: max |%s - transformers| = %.2e", backendName, dir, backendName, d)
	if d > parityTol {
		t.Errorf("%s %s: last_hidden_state differs from transformers' ModernBertModel by %.2e (> %.0e)", backendName, dir, d, parityTol)
	}
	if !st {
		return nil
	}
	emb, cls := paritytest.Concat(e.Emb), paritytest.Concat(e.CLS)
	d = paritytest.MaxDiff(tensors.MustCopyFlatData[float32](out[1]), emb)
	t.Logf("%s: padded batch, mean pooling: max |%s - sentence-transformers| = %.2e", backendName, backendName, d)
	if d > parityTol {
		t.Errorf("%s: mean-pooled batch differs from sentence-transformers by %.2e (> %.0e)", backendName, d, parityTol)
	}
	d = paritytest.MaxDiff(tensors.MustCopyFlatData[float32](out[2]), cls)
	t.Logf("%s: padded batch, CLS pooling: max |%s - transformers| = %.2e", backendName, backendName, d)
	if d > parityTol {
		t.Errorf("%s: CLS states differ from transformers by %.2e (> %.0e)", backendName, d, parityTol)
	}
	embs, worst := paritytest.EachAlone(t, exec, e.IDs, 1, e.Emb, parityTol, func(i int, d float64) {
		t.Errorf("%s: text %d %q alone: embedding differs from sentence-transformers by %.2e (> %.0e)", backendName, i, e.Texts[i], d, parityTol)
	})
	t.Logf("%s: each text alone, mean pooling: max |%s - sentence-transformers| = %.2e", backendName, backendName, worst)
	return embs
}

func TestParityTransformers(t *testing.T) {
	e := paritytest.Expected[expected](t)
	checkParity(t, "go", fixtureDir, e.Hidden, true)
}

func TestParityTransformersBias(t *testing.T) {
	e := paritytest.Expected[expected](t)
	checkParity(t, "go", biasDir, e.BiasHidden, false)
}

// TestWindowMatters: the fixture's texts are longer than the local window, so treating the
// local layer as global (or the other way round) changes the states: the parity above tests
// the window.
func TestWindowMatters(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Skip(err)
	}
	e := paritytest.Expected[expected](t)
	for _, edit := range []func(c *Config){
		func(c *Config) { c.LocalAttention = 1 << 20 },
		func(c *Config) { c.RopeParameters = nil; c.LocalRopeTheta = c.GlobalRopeTheta },
		func(c *Config) { c.LayerTypes = []string{FullAttention, FullAttention, FullAttention} },
	} {
		store := model.NewStore()
		cfg, err := LoadHF(store.RootScope(), fixtureDir)
		if err != nil {
			t.Fatal(err)
		}
		edit(cfg)
		exec, err := model.NewExec(be, store, func(root *model.Scope, ids, mask *Node) *Node {
			return Encode(root, cfg, ids, mask)
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Exec(paritytest.Flat(e.BatchIDs), paritytest.Flat(e.BatchMask))
		if err != nil {
			t.Fatal(err)
		}
		if d := paritytest.MaxDiff(tensors.MustCopyFlatData[float32](out[0]), e.Hidden); d < 1e-3 {
			t.Errorf("changed config: states within %.2e of the reference; the fixture does not test it", d)
		}
	}
}

func TestSaveHFRoundTrip(t *testing.T) {
	for _, dir := range []string{fixtureDir, biasDir} {
		store := model.NewStore()
		cfg, err := LoadHF(store.RootScope(), dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, prefix := range []bool{false, true} {
			out := t.TempDir()
			if err := SaveHF(store.RootScope(), cfg, out, prefix); err != nil {
				t.Fatal(err)
			}
			again := model.NewStore()
			cfg2, err := LoadHF(again.RootScope(), out)
			if err != nil {
				t.Fatalf("%s prefix %v: %v", dir, prefix, err)
			}
			if b, err := os.ReadFile(out + "/config.json"); err != nil || !strings.Contains(string(b), `"initializer_cutoff_factor": 2.0`) {
				t.Errorf("%s: config.json writes initializer_cutoff_factor as an int (transformers wants a float): %v", dir, err)
			}
			if cfg2.ModelType != ModelType || cfg2.NormBias != cfg.NormBias || cfg2.Window() != cfg.Window() ||
				cfg2.RopeTheta(true) != cfg.RopeTheta(true) || cfg2.RopeTheta(false) != cfg.RopeTheta(false) {
				t.Errorf("%s prefix %v: reloaded config %+v", dir, prefix, cfg2)
			}
			paritytest.SameVariables(t, store, again, Params(cfg), fmt.Sprintf("%s prefix %v", dir, prefix))
		}
	}
}

// TestLegacyConfig: a config.json as released checkpoints carry it (no layer_types nor
// rope_parameters) gives the same layer pattern and RoPE bases.
func TestLegacyConfig(t *testing.T) {
	dir := t.TempDir()
	b := []byte(`{"model_type": "modernbert", "vocab_size": 608, "hidden_size": 32, "intermediate_size": 24,
		"num_hidden_layers": 4, "num_attention_heads": 2, "global_attn_every_n_layers": 3, "local_attention": 8,
		"global_rope_theta": 160000.0, "local_rope_theta": 10000.0, "pad_token_id": 603, "norm_eps": 1e-5}`)
	if err := os.WriteFile(dir+"/config.json", b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(dir + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for l := 0; l < c.NumHiddenLayers; l++ {
		got = append(got, c.IsGlobal(l))
	}
	if !slices.Equal(got, []bool{true, false, false, true}) || c.Window() != 4 || c.RopeTheta(true) != 160000 || c.RopeTheta(false) != 10000 {
		t.Errorf("global %v window %d thetas %v %v", got, c.Window(), c.RopeTheta(true), c.RopeTheta(false))
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(c *Config)
		want string
	}{
		{func(c *Config) { c.PadTokenID = -1 }, "pad_token_id"},
		{func(c *Config) { c.NumAttentionHeads = 5 }, "not a multiple"},
		{func(c *Config) { c.HiddenSize, c.NumAttentionHeads = 36, 12 }, "must be even"},
		{func(c *Config) { c.GlobalAttnEveryNLayers = 0 }, "global_attn_every_n_layers"},
		{func(c *Config) { c.LayerTypes = []string{FullAttention} }, "layer_types has 1 entries"},
		{func(c *Config) { c.LayerTypes = make([]string, 22) }, `layer_types[0] ""`},
		{func(c *Config) { c.HiddenActivation = "swish" }, "hidden_activation"},
		{func(c *Config) {
			c.RopeParameters = map[string]RopeParameter{FullAttention: {RopeType: "yarn", RopeTheta: 1}}
		}, "rope_type"},
		{func(c *Config) { c.Pooler = true }, "no pooler"},
		{func(c *Config) { c.NormEps = 0 }, "norm_eps"},
	} {
		c := Default()
		tc.edit(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error naming %q", err, tc.want)
		}
	}
	c := Default()
	if err := json.Unmarshal([]byte(`{"rope_scaling": {"type": "linear", "factor": 2}}`), c); err == nil || !strings.Contains(err.Error(), "rope_scaling") {
		t.Errorf("rope_scaling: %v", err)
	}
}

// TestFloat64: the same initialisation computed in float64 agrees with float32 (the float64
// path, RoPE tables included, is what gradient checks run).
func TestFloat64(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Skip(err)
	}
	e := paritytest.Expected[expected](t)
	var outs [][]float64
	for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.Float64} {
		cfg, err := LoadConfig(fixtureDir + "/config.json")
		if err != nil {
			t.Fatal(err)
		}
		cfg.DType = dt
		cfg.InitializerRange = 0.2
		store := model.NewStore()
		if err := Init(store.RootScope(), cfg, 5); err != nil {
			t.Fatal(err)
		}
		exec, err := model.NewExec(be, store, func(root *model.Scope, ids, mask *Node) *Node {
			return ConvertDType(Encode(root, cfg, ids, mask), dtypes.Float64)
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Exec(paritytest.Flat(e.BatchIDs), paritytest.Flat(e.BatchMask))
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].Shape().Dimensions; !slices.Equal(got, e.Shape) {
			t.Fatalf("%s: shape %v, want %v", dt, got, e.Shape)
		}
		outs = append(outs, tensors.MustCopyFlatData[float64](out[0]))
	}
	d := 0.0
	for i := range outs[0] {
		d = math.Max(d, math.Abs(outs[0][i]-outs[1][i]))
	}
	t.Logf("max |float32 - float64| = %.2e", d)
	if d > 1e-4 || d == 0 {
		t.Errorf("float32 and float64 differ by %.2e (want (0, 1e-4])", d)
	}
}
