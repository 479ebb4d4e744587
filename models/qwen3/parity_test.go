package qwen3

import (
	"encoding/json"
	"fmt"
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

// fixtureDir is the tiny Qwen3 of scripts/parity/make_qwen3_fixture.py, laid out as
// sentence-transformers saves Qwen3-Embedding (Transformer, lasttoken Pooling, Normalize).
const fixtureDir = "testdata/tiny"

// expected is written by scripts/parity/make_qwen3_fixture.py from sentence-transformers and
// transformers' Qwen3Model.
type expected struct {
	QueryPrompt string      `json:"query_prompt"`
	Texts       []string    `json:"texts"`
	IDs         [][]int32   `json:"ids"`
	Emb         [][]float64 `json:"embeddings"`
	Shape       []int       `json:"hidden_shape"`
	Left, Right batch
}

type batch struct {
	IDs    [][]int32 `json:"ids"`
	Mask   [][]int32 `json:"mask"`
	Hidden []float64 `json:"last_hidden_state"`
}

// parityTol bounds max |toolret - reference| on the fixture (float32), as issue 56 asks.
const parityTol = 1e-5

// embedExec returns an exec of (ids, mask) -> (last hidden states, the sentence-transformers
// embedding: last-token pooling then L2 normalisation).
func embedExec(t *testing.T, be string) (*Config, *model.Exec) {
	t.Helper()
	b, err := backend.Open(be)
	if err != nil {
		t.Skipf("backend %s: %v", be, err)
	}
	store := model.NewStore()
	cfg, err := LoadHF(store.RootScope(), fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := model.NewExec(b, store, func(root *model.Scope, ids, mask *Node) []*Node {
		h := Encode(root, cfg, ids, nil, mask)
		return []*Node{h, L2Normalize(Pool(h, mask, pooling.Last), -1)}
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, exec
}

// TestParityTransformers compares, on the go backend, the last hidden states of a left- and a
// right-padded batch with transformers' Qwen3Model (real positions; padding positions attend
// to nothing real and are pooled by nothing), the embeddings of the batch (last-token pooling,
// Normalize) and of each text alone with sentence-transformers' encode_query/encode_document.
func TestParityTransformers(t *testing.T) {
	e := paritytest.Expected[expected](t)
	cfg, exec := embedExec(t, "go")
	if cfg.NumKeyValueHeads >= cfg.NumAttentionHeads || cfg.HeadDim*cfg.NumAttentionHeads == cfg.HiddenSize {
		t.Fatalf("fixture: kv heads %d, heads %d, head_dim %d: want GQA and head_dim != hidden/heads", cfg.NumKeyValueHeads, cfg.NumAttentionHeads, cfg.HeadDim)
	}
	want := paritytest.Concat(e.Emb)
	for _, tc := range []struct {
		name string
		b    batch
	}{{"left", e.Left}, {"right", e.Right}} {
		out, err := exec.Exec(paritytest.Flat(tc.b.IDs), paritytest.Flat(tc.b.Mask))
		if err != nil {
			t.Fatal(err)
		}
		d := paritytest.MaskedDiff(tensors.MustCopyFlatData[float32](out[0]), tc.b.Hidden, tc.b.Mask, cfg.HiddenSize)
		t.Logf("%s-padded batch, last_hidden_state (real positions): max |go - transformers| = %.2e", tc.name, d)
		if d > parityTol {
			t.Errorf("%s-padded batch: last_hidden_state differs from transformers' Qwen3Model by %.2e (> %.0e)", tc.name, d, parityTol)
		}
		d = paritytest.MaxDiff(tensors.MustCopyFlatData[float32](out[1]), want)
		t.Logf("%s-padded batch, embeddings: max |go - sentence-transformers| = %.2e", tc.name, d)
		if d > parityTol {
			t.Errorf("%s-padded batch: embeddings differ from sentence-transformers by %.2e (> %.0e)", tc.name, d, parityTol)
		}
	}
	_, worst := paritytest.EachAlone(t, exec, e.IDs, 1, e.Emb, parityTol, func(i int, d float64) {
		t.Errorf("text %d %q alone: embedding differs from sentence-transformers by %.2e (> %.0e)", i, e.Texts[i], d, parityTol)
	})
	t.Logf("each text alone, embeddings: max |go - sentence-transformers| = %.2e", worst)
}

// TestPaddingSides: the left- and right-padded batches give the same embeddings (RoPE sees
// only position differences) and the same states at real tokens.
func TestPaddingSides(t *testing.T) {
	e := paritytest.Expected[expected](t)
	_, exec := embedExec(t, "go")
	left, err := exec.Exec(paritytest.Flat(e.Left.IDs), paritytest.Flat(e.Left.Mask))
	if err != nil {
		t.Fatal(err)
	}
	right, err := exec.Exec(paritytest.Flat(e.Right.IDs), paritytest.Flat(e.Right.Mask))
	if err != nil {
		t.Fatal(err)
	}
	l, r := tensors.MustCopyFlatData[float32](left[1]), tensors.MustCopyFlatData[float32](right[1])
	d := paritytest.MaxDiff(l, paritytest.F64(r))
	t.Logf("embeddings, left vs right padding: max diff %.2e", d)
	if d > parityTol {
		t.Errorf("left- and right-padded embeddings differ by %.2e (> %.0e)", d, parityTol)
	}
	// The padded rows really are padded on both sides (the test would be vacuous otherwise).
	if e.Left.Mask[len(e.Left.Mask)-1][0] != 0 || e.Right.Mask[len(e.Right.Mask)-1][len(e.Right.Mask[0])-1] != 0 {
		t.Fatalf("fixture: the last text is not padded on both sides")
	}
}

// TestLastTokenPooling checks pooling.Last on hand-made states: right padding, left padding,
// and a row without real tokens (the last position, times its zero mask).
func TestLastTokenPooling(t *testing.T) {
	b, err := backend.Open("go")
	if err != nil {
		t.Skip(err)
	}
	// hidden[b, s, 0] = 10 b + s.
	h := tensors.FromFlatDataAndDimensions([]float32{0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23}, 3, 4, 1)
	mask := tensors.FromFlatDataAndDimensions([]int32{1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0}, 3, 4)
	out, err := model.NewExec(b, model.NewStore(), func(_ *model.Scope, h, m *Node) *Node {
		return pooling.Pool(h, m, pooling.Last, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := out.Exec(h, mask)
	if err != nil {
		t.Fatal(err)
	}
	if g := tensors.MustCopyFlatData[float32](got[0]); !slices.Equal(g, []float32{1, 13, 0}) {
		t.Errorf("last-token pooling = %v, want [1 13 0]", g)
	}
	if p, err := pooling.Parse("lasttoken"); err != nil || p != pooling.Last {
		t.Errorf("Parse(lasttoken) = %q, %v", p, err)
	}
}

func TestSaveHFRoundTrip(t *testing.T) {
	store := model.NewStore()
	cfg, err := LoadHF(store.RootScope(), fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []bool{false, true} {
		dir := t.TempDir()
		if err := SaveHF(store.RootScope(), cfg, dir, prefix); err != nil {
			t.Fatal(err)
		}
		again := model.NewStore()
		cfg2, err := LoadHF(again.RootScope(), dir)
		if err != nil {
			t.Fatalf("prefix %v: %v", prefix, err)
		}
		if cfg2.Theta() != cfg.Theta() || cfg2.HeadDim != cfg.HeadDim || cfg2.NumKeyValueHeads != cfg.NumKeyValueHeads {
			t.Errorf("prefix %v: reloaded config %+v, want %+v", prefix, cfg2, cfg)
		}
		paritytest.SameVariables(t, store, again, Params(cfg), fmt.Sprintf("prefix %v", prefix))
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(c *Config)
		want string
	}{
		{func(c *Config) { c.NumKeyValueHeads = 3 }, "num_key_value_heads"},
		{func(c *Config) { c.HeadDim = 7 }, "head_dim"},
		{func(c *Config) { c.UseSlidingWindow = true }, "use_sliding_window"},
		{func(c *Config) { c.RopeScaling = json.RawMessage(`{"type":"yarn"}`) }, "rope_scaling"},
		{func(c *Config) { c.RopeParameters = &RopeParameters{RopeTheta: 1, RopeType: "yarn"} }, "rope_type"},
		{func(c *Config) { c.HiddenAct = "gelu" }, "hidden_act"},
		{func(c *Config) { c.LayerTypes = []string{"sliding_attention"}; c.NumHiddenLayers = 1 }, "layer_types"},
		{func(c *Config) { c.RMSNormEps = 0 }, "rms_norm_eps"},
	} {
		c := Default()
		tc.edit(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error naming %q", err, tc.want)
		}
	}
}
