package gemma3

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/internal/paritytest"
	"github.com/toolret/toolret/models/pooling"
)

// fixtureDir is the tiny Gemma3 of scripts/parity/make_gemma3_fixture.py, laid out as
// sentence-transformers saves EmbeddingGemma (Transformer, mean Pooling, two Dense, Normalize);
// causalDir holds the same weights with causal attention and attn_logit_softcapping set.
const (
	fixtureDir = "testdata/tiny"
	causalDir  = "testdata/causal"
)

var fixtureDense = []string{"testdata/tiny/2_Dense", "testdata/tiny/3_Dense"}

// expected is written by scripts/parity/make_gemma3_fixture.py from sentence-transformers and
// transformers' Gemma3TextModel.
type expected struct {
	Texts        []string    `json:"texts"`
	IDs          [][]int32   `json:"ids"`
	Emb          [][]float64 `json:"embeddings"`
	BatchIDs     [][]int32   `json:"batch_ids"`
	BatchMask    [][]int32   `json:"batch_mask"`
	Hidden       []float64   `json:"last_hidden_state"`
	CausalHidden []float64   `json:"causal_last_hidden_state"`
}

// parityTol bounds max |toolret - reference| on the fixture (float32), as issue 56 asks.
const parityTol = 1e-5

// embedExec loads dir (with the Dense module directories dense) and returns an exec of
// (ids, mask) -> (last hidden states, the sentence-transformers embedding: mean pooling, the
// Dense modules, L2 normalisation).
func embedExec(t *testing.T, dir string, dense []string) (*Config, *model.Exec) {
	t.Helper()
	return embedExecOn(t, "go", dir, dense)
}

// embedExecOn is embedExec on backend be (skipped when it cannot be opened).
func embedExecOn(t *testing.T, be, dir string, dense []string) (*Config, *model.Exec) {
	t.Helper()
	b, err := backend.Open(be)
	if err != nil {
		t.Skipf("backend %s: %v", be, err)
	}
	store := model.NewStore()
	cfg, err := LoadHF(store.RootScope(), dir, dense)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := model.NewExec(b, store, func(root *model.Scope, ids, mask *Node) []*Node {
		h := Encode(root, cfg, ids, nil, mask)
		return []*Node{h, L2Normalize(Pool(root, cfg, h, mask, pooling.Mean), -1)}
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, exec
}

// TestParityTransformers compares, on the go backend, the last hidden states of a padded batch
// (real positions) with transformers' Gemma3TextModel, bidirectional with sliding windows
// (tiny/) and causal with attn_logit_softcapping set (causal/: transformers does not apply it,
// nor does toolret), and the embeddings (mean pooling, Dense,
// Dense, Normalize) of the batch and of each text alone with sentence-transformers'
// encode_query/encode_document.
func TestParityTransformers(t *testing.T) {
	e := paritytest.Expected[expected](t)
	cfg, exec := embedExec(t, fixtureDir, fixtureDense)
	if !cfg.UseBidirectionalAttention || len(cfg.Dense) != 2 || cfg.NumKeyValueHeads >= cfg.NumAttentionHeads {
		t.Fatalf("fixture: bidirectional %v, %d Dense modules, kv heads %d of %d: want true, 2, GQA",
			cfg.UseBidirectionalAttention, len(cfg.Dense), cfg.NumKeyValueHeads, cfg.NumAttentionHeads)
	}
	if longest := len(e.BatchIDs[0]); cfg.Window() >= longest {
		t.Fatalf("fixture: window %d covers the longest text (%d tokens)", cfg.Window(), longest)
	}
	out, err := exec.Exec(paritytest.Flat(e.BatchIDs), paritytest.Flat(e.BatchMask))
	if err != nil {
		t.Fatal(err)
	}
	d := paritytest.MaskedDiff(tensors.MustCopyFlatData[float32](out[0]), e.Hidden, e.BatchMask, cfg.HiddenSize)
	t.Logf("bidirectional, padded batch, last_hidden_state (real positions): max |go - transformers| = %.2e", d)
	if d > parityTol {
		t.Errorf("last_hidden_state differs from transformers' Gemma3TextModel by %.2e (> %.0e)", d, parityTol)
	}
	want := paritytest.Concat(e.Emb)
	d = paritytest.MaxDiff(tensors.MustCopyFlatData[float32](out[1]), want)
	t.Logf("padded batch, embeddings: max |go - sentence-transformers| = %.2e", d)
	if d > parityTol {
		t.Errorf("padded batch: embeddings differ from sentence-transformers by %.2e (> %.0e)", d, parityTol)
	}
	_, worst := paritytest.EachAlone(t, exec, e.IDs, 1, e.Emb, parityTol, func(i int, d float64) {
		t.Errorf("text %d %q alone: embedding differs from sentence-transformers by %.2e (> %.0e)", i, e.Texts[i], d, parityTol)
	})
	t.Logf("each text alone, embeddings: max |go - sentence-transformers| = %.2e", worst)

	ccfg, cexec := embedExec(t, causalDir, nil)
	if ccfg.UseBidirectionalAttention || ccfg.AttnLogitSoftcapping == nil {
		t.Fatalf("causal fixture: bidirectional %v, attn_logit_softcapping %v: want false, set", ccfg.UseBidirectionalAttention, ccfg.AttnLogitSoftcapping)
	}
	out, err = cexec.Exec(paritytest.Flat(e.BatchIDs), paritytest.Flat(e.BatchMask))
	if err != nil {
		t.Fatal(err)
	}
	d = paritytest.MaskedDiff(tensors.MustCopyFlatData[float32](out[0]), e.CausalHidden, e.BatchMask, ccfg.HiddenSize)
	t.Logf("causal (attn_logit_softcapping set, unapplied), padded batch, last_hidden_state (real positions): max |go - transformers| = %.2e", d)
	if d > parityTol {
		t.Errorf("causal: last_hidden_state differs from transformers' Gemma3TextModel by %.2e (> %.0e)", d, parityTol)
	}
}

func TestSaveHFRoundTrip(t *testing.T) {
	store := model.NewStore()
	cfg, err := LoadHF(store.RootScope(), fixtureDir, fixtureDense)
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []bool{false, true} {
		dir := t.TempDir()
		if err := SaveHF(store.RootScope(), cfg, dir, prefix); err != nil {
			t.Fatal(err)
		}
		again := model.NewStore()
		cfg2, err := LoadHF(again.RootScope(), dir, []string{filepath.Join(dir, DenseDir(0)), filepath.Join(dir, DenseDir(1))})
		if err != nil {
			t.Fatalf("prefix %v: %v", prefix, err)
		}
		if cfg2.Window() != cfg.Window() || !slices.Equal(cfg2.Dense, cfg.Dense) || cfg2.ropeTheta(SlidingAttention) != cfg.ropeTheta(SlidingAttention) {
			t.Errorf("prefix %v: reloaded config %+v, want %+v", prefix, cfg2, cfg)
		}
		paritytest.SameVariables(t, store, again, Params(cfg), fmt.Sprintf("prefix %v", prefix))
	}
}

// TestDenseErrors: a Dense module toolret cannot apply is refused with its file named.
func TestDenseErrors(t *testing.T) {
	write := func(t *testing.T, cfg string) string {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "config.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		name, cfg, want string
	}{
		{"tanh", `{"in_features": 64, "out_features": 96, "bias": false, "activation_function": "torch.nn.modules.activation.Tanh"}`, "activation_function"},
		{"no weights", `{"in_features": 64, "out_features": 96, "bias": false, "activation_function": "torch.nn.modules.linear.Identity"}`, "model.safetensors"},
		{"zero width", `{"in_features": 0, "out_features": 96, "bias": false, "activation_function": "torch.nn.modules.linear.Identity"}`, "in_features"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadHF(model.NewStore().RootScope(), fixtureDir, []string{write(t, tc.cfg)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadHF = %v, want an error naming %q", err, tc.want)
			}
		})
	}
	// A chain that does not end at hidden_size.
	if _, err := LoadHF(model.NewStore().RootScope(), fixtureDir, fixtureDense[:1]); err == nil || !strings.Contains(err.Error(), "hidden_size") {
		t.Errorf("LoadHF with the first Dense only = %v, want an error naming hidden_size", err)
	}
}

func TestConfig(t *testing.T) {
	c := Default()
	if c.LayerType(0) != SlidingAttention || c.LayerType(5) != FullAttention || c.Window() != 257 {
		t.Errorf("EmbeddingGemma: layer 0 %s, layer 5 %s, window %d: want sliding, full, 257", c.LayerType(0), c.LayerType(5), c.Window())
	}
	for _, tc := range []struct {
		edit func(c *Config)
		want string
	}{
		{func(c *Config) { c.NumKeyValueHeads = 2 }, "num_key_value_heads"},
		{func(c *Config) { c.QueryPreAttnScalar = 0 }, "query_pre_attn_scalar"},
		{func(c *Config) { c.RopeScaling = json.RawMessage(`{"factor":8}`) }, "rope_scaling"},
		{func(c *Config) { c.HiddenActivation = "relu" }, "hidden_activation"},
		{func(c *Config) { c.SlidingWindow = 0 }, "sliding_window"},
		{func(c *Config) { c.LayerTypes = []string{"chunked_attention"}; c.NumHiddenLayers = 1 }, "layer_types"},
		{func(c *Config) { c.RopeLocalBaseFreq = 0 }, "rope_local_base_freq"},
		{func(c *Config) { c.Dense = []Dense{{In: 768, Out: 3072}} }, "hidden_size"},
	} {
		c := Default()
		tc.edit(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error naming %q", err, tc.want)
		}
	}
}
