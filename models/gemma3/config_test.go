package gemma3

import (
	"os"
	"path/filepath"
	"testing"
)

// embeddingGemmaConfig is the config.json layout of EmbeddingGemma-300M as transformers 4.56
// wrote it: RoPE bases at the top level, rope_scaling null, the private
// _sliding_window_pattern, layer_types listed.
const embeddingGemmaConfig = `{
  "_sliding_window_pattern": 6,
  "architectures": ["Gemma3TextModel"],
  "attention_bias": false, "attention_dropout": 0.0, "attn_logit_softcapping": null,
  "bos_token_id": 2, "eos_token_id": 1, "final_logit_softcapping": null,
  "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 768,
  "initializer_range": 0.02, "intermediate_size": 1152,
  "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
    "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
    "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
    "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
  "max_position_embeddings": 2048, "model_type": "gemma3_text", "num_attention_heads": 3,
  "num_hidden_layers": 24, "num_key_value_heads": 1, "pad_token_id": 0, "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0, "rope_scaling": null, "rope_theta": 1000000.0,
  "sliding_window": 512, "torch_dtype": "float32", "transformers_version": "4.56.0",
  "use_bidirectional_attention": true, "use_cache": true, "vocab_size": 262144
}`

// TestLoadConfigLayouts reads the older top-level RoPE layout and the fixture's transformers 5
// rope_parameters layout, and a configuration without layer_types (the pattern decides).
func TestLoadConfigLayouts(t *testing.T) {
	write := func(t *testing.T, s string) string {
		p := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path    string
		full, sliding float64
		window        int
		layer0, last  string
		bidirectional bool
		softcapSet    bool
	}{
		{"EmbeddingGemma 4.56", write(t, embeddingGemmaConfig), 1e6, 1e4, 257, SlidingAttention, FullAttention, true, false},
		{"fixture, transformers 5", "testdata/tiny/config.json", 1000, 100, 4, SlidingAttention, FullAttention, true, false},
		{"causal fixture", "testdata/causal/config.json", 1000, 100, 6, SlidingAttention, FullAttention, false, true},
		{"no layer_types", write(t, `{"vocab_size": 10, "hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 6,
			"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "sliding_window": 4,
			"sliding_window_pattern": 3, "rope_theta": 50, "rope_local_base_freq": 5}`), 50, 5, 4, SlidingAttention, FullAttention, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConfig(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if c.ropeTheta(FullAttention) != tc.full || c.ropeTheta(SlidingAttention) != tc.sliding || c.Window() != tc.window ||
				c.LayerType(0) != tc.layer0 || c.LayerType(c.NumHiddenLayers-1) != tc.last || c.UseBidirectionalAttention != tc.bidirectional ||
				(c.AttnLogitSoftcapping != nil) != tc.softcapSet {
				t.Errorf("theta %v/%v, window %d, first and last layers %s %s, bidirectional %v, softcap %v",
					c.ropeTheta(FullAttention), c.ropeTheta(SlidingAttention), c.Window(), c.LayerType(0), c.LayerType(c.NumHiddenLayers-1),
					c.UseBidirectionalAttention, c.AttnLogitSoftcapping)
			}
		})
	}
}
