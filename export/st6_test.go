package export_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
)

// TestSentenceTransformers6Layout loads a directory as sentence-transformers 6.x saves it: module
// types under sentence_transformers.base.modules / .sentence_transformer.modules, the pooling as
// one "pooling_mode" string, and the length only in tokenizer_config.json's model_max_length.
// (Seen on a model fine-tuned by sentence-transformers 6.0.1, which toolret refused.)
func TestSentenceTransformers6Layout(t *testing.T) {
	be := goBackend(t)
	for _, tc := range []struct {
		name string
		pool encoder.Pooling
		mode string
	}{
		{"mean", encoder.PoolMean, "mean"},
		{"cls", encoder.PoolCLS, "cls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := exporttest.BiEncoder(exporttest.Options{Pooling: tc.pool}, be, 7)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "hf")
			if _, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out}); err != nil {
				t.Fatal(err)
			}
			write := func(name string, v any) {
				b, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Dir(filepath.Join(out, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("modules.json", []map[string]any{
				{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.transformer.Transformer"},
				{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.sentence_transformer.modules.pooling.Pooling"},
				{"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.base.modules.normalize.Normalize"},
			})
			write("1_Pooling/config.json", map[string]any{"embedding_dimension": 16, "pooling_mode": tc.mode, "include_prompt": true})
			write("2_Normalize/config.json", map[string]any{})
			write("config_sentence_transformers.json", map[string]any{"model_type": "SentenceTransformer",
				"prompts": map[string]string{"query": "", "document": ""}, "similarity_fn_name": "cosine"})
			write("sentence_bert_config.json", map[string]any{"transformer_task": "feature-extraction", "module_output_name": "token_embeddings"})
			var tc2 map[string]any
			b, err := os.ReadFile(filepath.Join(out, "tokenizer_config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &tc2); err != nil {
				t.Fatal(err)
			}
			tc2["model_max_length"] = 24
			write("tokenizer_config.json", tc2)

			hm, err := export.LoadHF(out, be)
			if err != nil {
				t.Fatalf("sentence-transformers 6 layout refused: %v", err)
			}
			ht, _ := hm.Tower("")
			if ht.Pooling != tc.pool || !ht.Normalize || ht.MaxLen != 24 {
				t.Fatalf("loaded pooling %s normalize %v max length %d, want %s true 24", ht.Pooling, ht.Normalize, ht.MaxLen, tc.pool)
			}
			if p, ok, err := encoder.STPooling(out); err != nil || !ok || p != tc.pool {
				t.Fatalf("encoder.STPooling = %s %v %v, want %s", p, ok, err, tc.pool)
			}
			texts := sampleTexts(t, 6)
			want, err := m.Embed(biencoder.ToolTower, texts)
			if err != nil {
				t.Fatal(err)
			}
			ht.MaxLen = 64
			got, err := hm.Embed("", texts)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff(t, want, got); d > 1e-6 {
				t.Errorf("embeddings differ by %g", d)
			}
		})
	}
}
