package encoder_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder"
)

// TestModernBERTNew: the registration's sizes, its HF names, the JSON round trip through the
// registry, Override, no token types, no pooler, and the refusal of an
// unsupported model_type naming modernbert among the supported ones.
func TestModernBERTNew(t *testing.T) {
	c, err := encoder.New("modernbert", encoder.Sizes{Vocab: 64, Hidden: 16, Layers: 3, Heads: 2, MaxPositions: 96})
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelType() != "modernbert" || c.Vocab() != 64 || c.Hidden() != 16 || c.Layers() != 3 || c.MaxPositions() != 96 ||
		c.TypeVocab() != 0 || c.HasPooler() || c.HF().Prefix != "model" || c.HF().Model != "ModernBertModel" {
		t.Errorf("config %s", mustJSON(t, c))
	}
	var f map[string]any
	json.Unmarshal(mustJSON(t, c), &f)
	for k, want := range map[string]any{"model_type": "modernbert", "intermediate_size": 24.0, "max_position_embeddings": 96.0,
		"pad_token_id": 0.0, "global_attn_every_n_layers": 3.0, "local_attention": 128.0, "norm_bias": false} {
		if f[k] != want {
			t.Errorf("%s = %v, want %v", k, f[k], want)
		}
	}
	def, err := encoder.New("modernbert", encoder.Sizes{})
	if err != nil || def.Hidden() != 768 || def.Layers() != 22 || def.Vocab() != 50368 || def.MaxPositions() != 8192 {
		t.Fatalf("ModernBERT-base defaults: %v %v", def, err)
	}
	back, err := encoder.Unmarshal(mustJSON(t, c))
	if err != nil || string(mustJSON(t, back)) != string(mustJSON(t, c)) {
		t.Fatalf("round trip: %v\n%s\n%s", err, mustJSON(t, back), mustJSON(t, c))
	}
	o, err := encoder.Override(c, map[string]any{"local_attention": 8})
	if err != nil || o.ModelType() != "modernbert" {
		t.Fatalf("override: %v %v", o, err)
	}
	if _, err := encoder.Override(c, map[string]any{"hidden_activation": "swish"}); err == nil {
		t.Error("hidden_activation swish accepted")
	}
	if err := c.WithPooler(true).Validate(); err == nil || !strings.Contains(err.Error(), "no pooler") {
		t.Errorf("WithPooler(true): %v, want refused", err)
	}
	if _, ok := c.(encoder.ONNX); !ok {
		t.Error("modernbert has no ONNX graph")
	}
	if err := c.WithDType(dtypes.Float64).Init(model.NewStore().RootScope(), 1); err != nil {
		t.Fatal(err)
	}
	_, err = encoder.Unmarshal([]byte(`{"model_type": "mamba"}`))
	if err == nil || !strings.Contains(err.Error(), `"mamba" not supported`) || !strings.Contains(err.Error(), "modernbert") {
		t.Errorf("unsupported model_type: %v, want it named with modernbert among the supported", err)
	}
}
