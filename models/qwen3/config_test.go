package qwen3

import (
	"os"
	"path/filepath"
	"testing"
)

// qwen3EmbeddingConfig is the config.json layout of Qwen3-Embedding-0.6B as transformers 4.51
// wrote it: rope_theta at the top level, rope_scaling and sliding_window null.
const qwen3EmbeddingConfig = `{
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151643, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 32768, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.51.3",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151669
}`

// TestLoadConfigLayouts reads the older top-level rope_theta layout and the fixture's
// transformers 5 rope_parameters one.
func TestLoadConfigLayouts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(qwen3EmbeddingConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path          string
		theta         float64
		heads, kv, hd int
	}{
		{p, 1e6, 16, 8, 128},
		{"testdata/tiny/config.json", 1000, 4, 2, 16},
	} {
		c, err := LoadConfig(tc.path)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if c.Theta() != tc.theta || c.NumAttentionHeads != tc.heads || c.NumKeyValueHeads != tc.kv || c.HeadDim != tc.hd {
			t.Errorf("%s: theta %v, heads %d, kv %d, head_dim %d; want %v %d %d %d", tc.path, c.Theta(), c.NumAttentionHeads,
				c.NumKeyValueHeads, c.HeadDim, tc.theta, tc.heads, tc.kv, tc.hd)
		}
	}
}
