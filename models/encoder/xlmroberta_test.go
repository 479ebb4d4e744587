package encoder_test

import (
	"encoding/json"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder"
)

// TestXLMRobertaNew: the registration's sizes (positions after the padding id, one token type),
// its HF names, the JSON round trip through the registry, Override, and that its one token
// type takes pairs (PairsWithOneType) while BERT's does not.
func TestXLMRobertaNew(t *testing.T) {
	c, err := encoder.New("xlm-roberta", encoder.Sizes{Vocab: 40, Hidden: 8, Layers: 2, Heads: 2, MaxPositions: 64})
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelType() != "xlm-roberta" || c.Vocab() != 40 || c.Hidden() != 8 || c.Layers() != 2 || c.MaxPositions() != 64 ||
		c.TypeVocab() != 1 || !c.HasPooler() || c.HF().Prefix != "roberta" || c.HF().SequenceClassification != "XLMRobertaForSequenceClassification" {
		t.Errorf("config %s", mustJSON(t, c))
	}
	var f map[string]any
	json.Unmarshal(mustJSON(t, c), &f)
	for k, want := range map[string]any{"model_type": "xlm-roberta", "max_position_embeddings": 66.0, "pad_token_id": 1.0,
		"type_vocab_size": 1.0, "layer_norm_eps": 1e-5, "bos_token_id": 0.0, "eos_token_id": 2.0, "position_embedding_type": "absolute"} {
		if f[k] != want {
			t.Errorf("%s = %v, want %v", k, f[k], want)
		}
	}
	def, err := encoder.New("xlm-roberta", encoder.Sizes{})
	if err != nil || def.Hidden() != 768 || def.Layers() != 12 || def.Vocab() != 250002 || def.MaxPositions() != 512 {
		t.Fatalf("xlm-roberta-base defaults: %v %v", def, err)
	}
	back, err := encoder.Unmarshal(mustJSON(t, c))
	if err != nil || string(mustJSON(t, back)) != string(mustJSON(t, c)) {
		t.Fatalf("round trip: %v\n%s\n%s", err, mustJSON(t, back), mustJSON(t, c))
	}
	o, err := encoder.Override(c, map[string]any{"hidden_act": "relu"})
	if err != nil || o.ModelType() != "xlm-roberta" {
		t.Fatalf("override: %v %v", o, err)
	}
	if _, err := encoder.Override(c, map[string]any{"position_embedding_type": "relative_key"}); err == nil {
		t.Error("relative_key positions accepted")
	}
	if !encoder.PairsWithOneType(c) || encoder.PairsWithOneType(tiny(t, 40)) {
		t.Error("PairsWithOneType: want true for xlm-roberta, false for bert")
	}
	if err := c.WithDType(dtypes.Float64).Init(model.NewStore().RootScope(), 1); err != nil {
		t.Fatal(err)
	}
}
