package encoder_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/models/encoder"
)

// oldBERT is the "bert" object of model configurations written before encoders were
// pluggable (as in run directories and checkpoints of that time).
const oldBERT = `{
    "vocab_size": 500,
    "hidden_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 128,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
    MODEL_TYPE
    "architectures": ["BertModel"]
  }`

// TestLegacyModelConfigs loads model configurations in the old shape ("bert": {...}, with and
// without model_type) and in the new one ("encoder": {...}), and checks that writing a loaded
// configuration gives the new shape, which loads back the same.
func TestLegacyModelConfigs(t *testing.T) {
	kinds := []struct {
		name  string
		rest  string
		parse func([]byte) (encoder.Config, []byte, error)
	}{
		{"biencoder", `"pooling": "mean", "shared": true, "query_max_len": 32, "tool_max_len": 64, "similarity": "cosine", "temperature": 0.05, "symmetric": false, "no_masking": false`,
			func(b []byte) (encoder.Config, []byte, error) {
				c, err := biencoder.Unmarshal(b)
				if err != nil {
					return nil, nil, err
				}
				if c.QueryMaxLen != 32 || c.Pooling != encoder.PoolMean {
					t.Errorf("biencoder fields lost: %+v", c)
				}
				return c.Encoder, c.Marshal(), nil
			}},
		{"crossencoder", `"max_len": 128, "loss": "bce"`,
			func(b []byte) (encoder.Config, []byte, error) {
				c, err := crossencoder.Unmarshal(b)
				if err != nil {
					return nil, nil, err
				}
				if c.MaxLen != 128 || c.LossKind != "bce" {
					t.Errorf("crossencoder fields lost: %+v", c)
				}
				return c.Encoder, c.Marshal(), nil
			}},
		{"classifier", `"kind": "querytype", "max_len": 32, "labels": ["single-tool", "multi-tool"], "loss": "ce"`,
			func(b []byte) (encoder.Config, []byte, error) {
				c, err := classifier.Unmarshal(b)
				if err != nil {
					return nil, nil, err
				}
				if c.Kind != classifier.KindQueryType || c.MaxLen != 32 || len(c.Labels) != 2 {
					t.Errorf("classifier fields lost: %+v", c)
				}
				return c.Encoder, c.Marshal(), nil
			}},
	}
	for _, k := range kinds {
		for _, shape := range []struct{ name, key, modelType string }{
			{"old", "bert", `"model_type": "bert",`},
			{"old without model_type", "bert", ""},
			{"new", "encoder", `"model_type": "bert",`},
		} {
			t.Run(k.name+"/"+shape.name, func(t *testing.T) {
				js := `{"` + shape.key + `": ` + strings.Replace(oldBERT, "MODEL_TYPE", shape.modelType, 1) + `, ` + k.rest + `}`
				enc, out, err := k.parse([]byte(js))
				if err != nil {
					t.Fatal(err)
				}
				if enc.ModelType() != "bert" || enc.Vocab() != 500 || enc.Hidden() != 16 || enc.Layers() != 1 || enc.MaxPositions() != 128 {
					t.Errorf("encoder %s", mustJSON(t, enc))
				}
				var m map[string]json.RawMessage
				if err := json.Unmarshal(out, &m); err != nil {
					t.Fatal(err)
				}
				if _, old := m["bert"]; old || m["encoder"] == nil {
					t.Fatalf("written config is not in the new shape:\n%s", out)
				}
				enc2, out2, err := k.parse(out)
				if err != nil {
					t.Fatal(err)
				}
				if string(out2) != string(out) || string(mustJSON(t, enc2)) != string(mustJSON(t, enc)) {
					t.Errorf("reload differs:\n%s\nwant\n%s", out2, out)
				}
			})
		}
	}
	t.Run("no encoder", func(t *testing.T) {
		if _, err := biencoder.Unmarshal([]byte(`{"pooling": "mean"}`)); err == nil || !strings.Contains(err.Error(), "no encoder config") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("unknown model_type", func(t *testing.T) {
		if _, err := crossencoder.Unmarshal([]byte(`{"encoder": {"model_type": "xlnet"}, "max_len": 8}`)); err == nil || !strings.Contains(err.Error(), `model_type "xlnet" not supported`) {
			t.Errorf("error %v", err)
		}
	})
}
