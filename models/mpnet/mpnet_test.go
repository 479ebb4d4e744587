package mpnet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/internal/paritytest"
	"github.com/toolret/toolret/models/pooling"
)

// expected is written by scripts/parity/make_mpnet_fixture.py from transformers' MPNetModel.
type expected struct {
	IDs        [][]int32 `json:"ids"`
	Mask       [][]int32 `json:"mask"`
	Lengths    []int     `json:"lengths"`
	Shape      []int     `json:"hidden_shape"`
	Hidden     []float64 `json:"last_hidden_state"`
	Mean       []float64 `json:"mean"`
	Pooler     []float64 `json:"pooler"`
	BucketFrom int       `json:"bucket_from"`
	Buckets    []int     `json:"buckets"`
}

// parityTol bounds max |toolret - transformers| on the fixture (float32).
const parityTol = 2e-6

func TestBucket(t *testing.T) {
	e := paritytest.Expected[expected](t)
	for i, want := range e.Buckets {
		rel := e.BucketFrom + i
		if got := Bucket(rel, 32); got != want {
			t.Errorf("Bucket(%d, 32) = %d, transformers %d", rel, got, want)
		}
	}
}

// run encodes ids/mask (rows of equal length) with the encoder under store and pools with p.
func run(t *testing.T, store *model.Store, cfg *Config, p pooling.Pooling, ids, mask [][]int32) []float32 {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	exec, err := model.NewExec(be, store, func(root *model.Scope, ids, mask *Node) *Node {
		return Pool(root, cfg, Encode(root, cfg, ids, mask), mask, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Exec(paritytest.Flat(ids), paritytest.Flat(mask))
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](out[0])
}

func TestParityTransformers(t *testing.T) {
	e := paritytest.Expected[expected](t)
	store := model.NewStore()
	cfg, err := LoadHF(store.RootScope(), "testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.HasPooler() || cfg.MaxTokens() != 64 {
		t.Fatalf("pooler %v, max tokens %d: want true, 64", cfg.HasPooler(), cfg.MaxTokens())
	}
	seq, h := e.Shape[1], e.Shape[2]
	// Real tokens only: padding positions are numbered differently (HF gives them the padding
	// position; nothing reads their states).
	real := func(x []float32) []float32 {
		if len(x) != len(e.Hidden) {
			return x
		}
		var out []float32
		for i, n := range e.Lengths {
			out = append(out, x[i*seq*h:i*seq*h+n*h]...)
		}
		return out
	}
	var hidden []float64
	for i, n := range e.Lengths {
		hidden = append(hidden, e.Hidden[i*seq*h:i*seq*h+n*h]...)
	}
	for _, tc := range []struct {
		p    pooling.Pooling
		want []float64
	}{{pooling.None, hidden}, {pooling.Mean, e.Mean}, {pooling.Pooler, e.Pooler}} {
		got := run(t, store, cfg, tc.p, e.IDs, e.Mask)
		if tc.p == pooling.None {
			got = real(got)
		}
		d := paritytest.MaxDiff(got, tc.want)
		t.Logf("%s: max |go - transformers| = %.2e", tc.p, d)
		if d > parityTol {
			t.Errorf("pooling %s differs from transformers' MPNetModel by %.2e (> %.0e)", tc.p, d, parityTol)
		}
	}
	// Padding never changes a text: each alone, unpadded, equals its row of the padded batch.
	for i, n := range e.Lengths {
		alone := run(t, store, cfg, pooling.None, [][]int32{e.IDs[i][:n]}, [][]int32{e.Mask[i][:n]})
		if d := paritytest.MaxDiff(alone, e.Hidden[i*seq*h:i*seq*h+n*h]); d > parityTol {
			t.Errorf("text %d alone differs from transformers' padded row by %.2e", i, d)
		}
	}
}

func TestSaveHFRoundTrip(t *testing.T) {
	e := paritytest.Expected[expected](t)
	store := model.NewStore()
	cfg, err := LoadHF(store.RootScope(), "testdata/tiny")
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
		a := run(t, store, cfg, pooling.Mean, e.IDs, e.Mask)
		b := run(t, again, cfg2, pooling.Mean, e.IDs, e.Mask)
		if d := paritytest.MaxDiff(a, paritytest.F64(b)); d != 0 {
			t.Errorf("prefix %v: reloaded model differs by %.2e", prefix, d)
		}
	}
}

func TestInitIsSeeded(t *testing.T) {
	cfg := Default()
	cfg.VocabSize, cfg.HiddenSize, cfg.NumHiddenLayers, cfg.NumAttentionHeads, cfg.IntermediateSize = 50, 16, 1, 2, 32
	ids, mask := [][]int32{{0, 5, 7, 2}}, [][]int32{{1, 1, 1, 1}}
	out := func(seed uint64) []float32 {
		s := model.NewStore()
		if err := Init(s.RootScope(), cfg, seed); err != nil {
			t.Fatal(err)
		}
		return run(t, s, cfg, pooling.Mean, ids, mask)
	}
	a, b, c := out(1), out(1), out(2)
	if paritytest.MaxDiff(a, paritytest.F64(b)) != 0 || paritytest.MaxDiff(a, paritytest.F64(c)) == 0 {
		t.Errorf("Init: same seed must give the same model, another seed another")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"odd buckets", func(c *Config) { c.RelativeBuckets = 31 }, "relative_attention_num_buckets"},
		{"pad outside vocab", func(c *Config) { c.PadTokenID = c.VocabSize }, "pad_token_id"},
		{"no positions", func(c *Config) { c.MaxPositionEmbeddings = 2 }, "max_position_embeddings"},
		{"heads", func(c *Config) { c.NumAttentionHeads = 7 }, "num_attention_heads"},
		{"act", func(c *Config) { c.HiddenAct = "swish" }, "hidden_act"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want an error naming %s", err, tc.want)
			}
		})
	}
	// A config.json that is not valid names the file.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "mpnet", "relative_attention_num_buckets": 3}`), 0o644)
	if _, err := LoadConfig(filepath.Join(dir, "config.json")); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("LoadConfig = %v, want an error naming config.json", err)
	}
}
