package export

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
)

// TestDecoderSTDirectories reads the sentence-transformers directories of the Qwen3 and
// Gemma3 parity fixtures as LoadHF does after the tokenizer (last-token or mean pooling, the
// Dense modules EmbeddingGemma's encoder owns, Normalize, the prompts), checks the bi-encoder
// embeds the recorded ids as sentence-transformers did, then writes the tower in HF layout
// (writeTowerHF) and reads it back the same way: same modules, same embeddings. A WordPiece
// vocabulary of the model's size stands in for the BPE tokenizers toolret does not read yet:
// the texts' ids are those the fixtures record.
func TestDecoderSTDirectories(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Skip(err)
	}
	for _, fx := range []struct {
		name, dir string
		pooling   encoder.Pooling
		modules   []string // modules.json types of the written directory, by kind
	}{
		{"qwen3", "../models/qwen3/testdata", encoder.PoolLast, []string{stTransformer, stPooling, stNormalize}},
		{"gemma3_text", "../models/gemma3/testdata", encoder.PoolMean, []string{stTransformer, stPooling, stDense, stDense, stNormalize}},
	} {
		t.Run(fx.name, func(t *testing.T) {
			var e struct {
				IDs [][]int32   `json:"ids"`
				Emb [][]float64 `json:"embeddings"`
			}
			b, err := os.ReadFile(filepath.Join(fx.dir, "expected.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			load := func(dir string) *Model {
				t.Helper()
				store := model.NewStore()
				cfg, err := encoder.LoadHF(store.RootScope(), dir)
				if err != nil {
					t.Fatal(err)
				}
				vocab := make([]string, cfg.Vocab())
				for i := range vocab {
					vocab[i] = fmt.Sprintf("t%d", i)
				}
				copy(vocab, []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
				tok, err := tokenize.New(vocab, false)
				if err != nil {
					t.Fatal(err)
				}
				tw := Tower{Encoder: cfg, Pooling: encoder.PoolCLS, MaxLen: min(512, cfg.MaxPositions())}
				if err := readSentenceTransformers(dir, &tw); err != nil {
					t.Fatal(err)
				}
				m := &Model{Kind: KindBiEncoder, Tok: tok, Store: store, Backend: be, Source: dir, Similarity: "cosine", Towers: []Tower{tw}}
				if m.QueryPrompt, m.ToolPrompt, err = encoder.STPrompts(dir); err != nil {
					t.Fatal(err)
				}
				if err := m.Validate(); err != nil {
					t.Fatal(err)
				}
				return m
			}
			check := func(what string, m *Model) {
				t.Helper()
				tw := &m.Towers[0]
				if tw.Pooling != fx.pooling || !tw.Normalize {
					t.Errorf("%s: pooling %q, normalize %v; want %q, true", what, tw.Pooling, tw.Normalize, fx.pooling)
				}
				worst := 0.0
				for i, ids := range e.IDs {
					out, err := m.run(tw, tw.Pooling, [][]int32{ids}, nil, len(ids))
					if err != nil {
						t.Fatal(err)
					}
					n := 0.0
					for _, v := range out[0] {
						n += float64(v) * float64(v)
					}
					for j, v := range out[0] {
						worst = max(worst, math.Abs(float64(v)/math.Sqrt(n)-e.Emb[i][j]))
					}
				}
				t.Logf("%s: max |toolret - sentence-transformers| = %.2e", what, worst)
				if worst > 1e-5 {
					t.Errorf("%s: embeddings differ from sentence-transformers by %.2e (> 1e-5)", what, worst)
				}
			}
			m := load(filepath.Join(fx.dir, "tiny"))
			check("fixture", m)
			out := t.TempDir()
			if err := writeTowerHF(m, &m.Towers[0], out, 32); err != nil {
				t.Fatal(err)
			}
			var mods []stModule
			if b, err := os.ReadFile(filepath.Join(out, "modules.json")); err != nil {
				t.Fatal(err)
			} else if err := json.Unmarshal(b, &mods); err != nil {
				t.Fatal(err)
			}
			if len(mods) != len(fx.modules) {
				t.Fatalf("written modules.json %+v, want types %v", mods, fx.modules)
			}
			for i, mod := range mods {
				if mod.Type != fx.modules[i] {
					t.Errorf("written module %d %+v, want type %s", i, mod, fx.modules[i])
				}
			}
			again := load(out)
			check("written and read back", again)
			if again.QueryPrompt != m.QueryPrompt || again.ToolPrompt != m.ToolPrompt {
				t.Errorf("prompts %q %q after writing, want %q %q", again.QueryPrompt, again.ToolPrompt, m.QueryPrompt, m.ToolPrompt)
			}
		})
	}
}
