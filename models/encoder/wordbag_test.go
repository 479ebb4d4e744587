package encoder_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/models/wordbag"
)

func tinyBag(t *testing.T, vocab int) encoder.Config {
	t.Helper()
	c, err := encoder.New(wordbag.ModelType, encoder.Sizes{Vocab: vocab, Hidden: 6, MaxPositions: 8, Layers: 3, Heads: 5})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestWordbagEncode: token states are each real token's vector times its weight (the idf
// WithIDF gave it), zero at padding; the mean-pooled vector of a text is the same padded or
// not; Init and the lazy initializer of a new graph give the same idf weights.
func TestWordbagEncode(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	df := []int{0, 3, 1, 2, 0, 3, 1}
	c := tinyBag(t, len(df)).(encoder.IDFInit).WithIDF(df, 3)
	if c.Layers() != 0 || c.Hidden() != 6 || c.TypeVocab() != 0 || c.HasPooler() {
		t.Fatalf("config %s", mustJSON(t, c))
	}
	store := model.NewStore()
	if err := c.Init(store.RootScope(), 5); err != nil {
		t.Fatal(err)
	}
	lazy := model.NewStore() // variables created by the first graph, from the config
	emb := func(s *model.Store) ([]float32, []float32) {
		e := tensors.MustCopyFlatData[float32](mustValue(t, encoder.Variable(s, "", wordbag.Embeddings)))
		w := tensors.MustCopyFlatData[float32](mustValue(t, encoder.Variable(s, "", wordbag.Weights)))
		return e, w
	}
	states := func(s *model.Store, ids, mask []int32, n int) ([]float32, []float32) {
		exec, err := model.NewExec(be, s, func(sc *model.Scope, ids, mask *Node) (*Node, *Node) {
			h := c.Encode(sc, ids, nil, mask)
			return h, c.Pool(sc, h, mask, encoder.PoolMean)
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Call(tensors.FromFlatDataAndDimensions(ids, 1, n), tensors.FromFlatDataAndDimensions(mask, 1, n))
		if err != nil {
			t.Fatal(err)
		}
		return tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1])
	}
	states(lazy, []int32{1}, []int32{1}, 1)
	_, lw := emb(lazy)
	e, w := emb(store)
	for i, d := range df {
		want := float32(math.Log(4 / (float64(d) + 0.5)))
		if math.Abs(float64(w[i]-want)) > 1e-6 || math.Abs(float64(lw[i]-want)) > 1e-6 {
			t.Errorf("weight of token %d (df %d): Init %v, lazy %v, want idf %v", i, df[i], w[i], lw[i], want)
		}
	}
	ids, mask := []int32{2, 5, 5, 3, 0}, []int32{1, 1, 1, 1, 0}
	h, pooled := states(store, ids, mask, 5)
	for p, id := range ids {
		for j := 0; j < 6; j++ {
			want := e[int(id)*6+j] * w[id] * float32(mask[p])
			if math.Abs(float64(h[p*6+j]-want)) > 1e-6 {
				t.Fatalf("state %d,%d = %v, want %v", p, j, h[p*6+j], want)
			}
		}
	}
	_, alone := states(store, ids[:4], mask[:4], 4)
	for j := range alone {
		if math.Abs(float64(alone[j]-pooled[j])) > 1e-6 {
			t.Fatalf("pooled padded %v, alone %v", pooled, alone)
		}
	}
}

func mustValue(t *testing.T, v *model.Variable) *tensors.Tensor {
	t.Helper()
	if v == nil {
		t.Fatal("variable missing")
	}
	x, err := v.Value()
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestWordbagHF: SaveHF then LoadHF gives the configuration and tensors back; a checkpoint with
// a tensor missing or misshapen, or a config the word bag cannot be, is refused by name.
func TestWordbagHF(t *testing.T) {
	c := tinyBag(t, 9)
	store := model.NewStore()
	if err := c.Init(store.RootScope(), 3); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := c.SaveHF(store.RootScope(), dir, false); err != nil {
		t.Fatal(err)
	}
	back := model.NewStore()
	got, err := encoder.LoadHF(back.RootScope(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(mustJSON(t, got)) != string(mustJSON(t, c)) {
		t.Errorf("config %s, want %s", mustJSON(t, got), mustJSON(t, c))
	}
	for _, p := range c.Params() {
		a := tensors.MustCopyFlatData[float32](mustValue(t, encoder.Variable(store, "", p.Name)))
		b := tensors.MustCopyFlatData[float32](mustValue(t, encoder.Variable(back, "", p.Name)))
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s[%d] = %v after the round trip, want %v", p.Name, i, b[i], a[i])
			}
		}
	}
	small := tinyBag(t, 7) // its config over the 9-row tensors
	b, _ := small.MarshalJSON()
	os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)
	if _, err := encoder.LoadHF(model.NewStore().RootScope(), dir); err == nil || !strings.Contains(err.Error(), wordbag.Embeddings) {
		t.Errorf("misshapen tensor: %v", err)
	}
	for _, tc := range []struct{ name, json, want string }{
		{"token types", `{"model_type": "wordbag", "vocab_size": 9, "hidden_size": 6, "max_position_embeddings": 8, "type_vocab_size": 2}`, "type_vocab_size 2"},
		{"no width", `{"model_type": "wordbag", "vocab_size": 9, "max_position_embeddings": 8 }`, "hidden_size 0"},
		{"pad", `{"model_type": "wordbag", "vocab_size": 9, "hidden_size": 6, "max_position_embeddings": 8, "initializer_range": 0.1, "pad_token_id": 9}`, "pad_token_id 9"},
		{"init std", `{"model_type": "wordbag", "vocab_size": 9, "hidden_size": 6, "max_position_embeddings": 8}`, "initializer_range 0"},
	} {
		c, err := encoder.Unmarshal([]byte(tc.json))
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := c.WithPooler(true).Validate(); err == nil || !strings.Contains(err.Error(), "no pooler") {
		t.Errorf("pooler: %v", err)
	}
}
