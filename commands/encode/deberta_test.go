package encodecmd

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
)

// unigramDir is the SentencePiece Unigram fixture: spm.model (2000 pieces, DeBERTa-v3's
// special ids), tokenizer_config.json and added_tokens.json ([MASK] = 2000), and hf/ with the
// equivalent tokenizer.json.
const unigramDir = "../../tokenize/testdata/unigram"

// unigramTexts returns the fixture's texts that encode accepts (not blank), with accents, CJK,
// full-width forms, emoji, runs of spaces, tabs and newlines, very long words.
func unigramTexts(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(unigramDir, "texts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Texts []string `json:"texts"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range f.Texts {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// copyFiles copies the named files of src into a new directory.
func copyFiles(t *testing.T, src string, names ...string) string {
	t.Helper()
	dst := t.TempDir()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

type encodedRow struct {
	IDs       []int32   `json:"ids"`
	Embedding []float32 `json:"embedding"`
}

// encodeFile runs the command on texts (written as JSONL, so texts with newlines stay one
// line) and returns its rows.
func encodeFile(t *testing.T, dir string, texts []string, pooling string, maxLen int) []encodedRow {
	t.Helper()
	tmp := t.TempDir()
	in, out := filepath.Join(tmp, "in.jsonl"), filepath.Join(tmp, "out.jsonl")
	var sb strings.Builder
	for _, s := range texts {
		b, _ := json.Marshal(map[string]string{"text": s})
		sb.Write(append(b, '\n'))
	}
	if err := os.WriteFile(in, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, in, out, pooling, maxLen, 32, "go"); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []encodedRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r encodedRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	if len(rows) != len(texts) {
		t.Fatalf("%d rows for %d texts", len(rows), len(texts))
	}
	return rows
}

// roundTripTol bounds |cmd/encode - toolret in process| (the acceptance bound). The command
// batches as Model.Embed and encoder.Map with 32 rows do, so the graph sees the same padded
// batches and the measured difference is 0; other batch sizes pad differently, which moves
// the embeddings of this model by up to 7e-7.
const roundTripTol = 1e-6

// compare checks the command's ids equal tok's and its embeddings want's.
func compare(t *testing.T, rows []encodedRow, tok *tokenize.Tokenizer, texts []string, maxLen int, want [][]float32) {
	t.Helper()
	d := 0.0
	for i, r := range rows {
		if ids := tok.Single(texts[i], maxLen); !slices.Equal(r.IDs, ids) {
			t.Fatalf("text %d %q: ids %v, in process %v", i, texts[i], r.IDs, ids)
		}
		if len(r.Embedding) != len(want[i]) {
			t.Fatalf("text %d: embedding of %d, want %d", i, len(r.Embedding), len(want[i]))
		}
		for k, v := range r.Embedding {
			d = max(d, math.Abs(float64(v-want[i][k])))
		}
	}
	t.Logf("%d texts: max |cmd/encode - in process| = %.2g", len(rows), d)
	if d > roundTripTol {
		t.Errorf("embeddings differ from toolret's in-process ones by %.2g (> %g)", d, roundTripTol)
	}
}

// TestEncodeDebertaSPMOnly builds a DeBERTa-v3 directory as the hub ships many fine-tunes:
// config.json, model.safetensors (SaveHF of a random 2-layer DeBERTa whose embedding table has
// more rows than the tokenizer has tokens, as deberta-v3's 128100 for 128001) and spm.model
// alone (2000 pieces + [MASK]). The command must tokenize as spm.model does and embed (mean and cls pooling) as the
// in-memory model.
func TestEncodeDebertaSPMOnly(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := copyFiles(t, unigramDir, "spm.model")
	tok, err := tokenize.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 2001 || tok.MaskID() != 2000 {
		t.Fatalf("spm.model alone: %d tokens, [MASK] %d; want 2001, 2000 (as HF's DebertaV2Tokenizer)", tok.VocabSize(), tok.MaskID())
	}
	enc, err := encoder.New("deberta-v2", encoder.Sizes{Vocab: 2100, Hidden: 32, Layers: 2, Heads: 4, MaxPositions: 128})
	if err != nil {
		t.Fatal(err)
	}
	if enc, err = encoder.Override(enc, map[string]any{"initializer_range": 0.2}); err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	if err := enc.Init(store.RootScope(), 11); err != nil {
		t.Fatal(err)
	}
	if err := enc.SaveHF(store.RootScope(), dir, false); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"config.json", "model.safetensors", "spm.model"}) {
		t.Fatalf("directory holds %v", names)
	}
	texts := unigramTexts(t)
	const maxLen = 48
	ids := make([][]int32, len(texts))
	for i, s := range texts {
		ids[i] = tok.Single(s, maxLen)
	}
	for _, pool := range []encoder.Pooling{encoder.PoolMean, encoder.PoolCLS} {
		r, err := encoder.NewRunner(be, store, "", enc, pool)
		if err != nil {
			t.Fatal(err)
		}
		want, err := encoder.Map(tok, ids, nil, maxLen, 32, r.Call)
		if err != nil {
			t.Fatal(err)
		}
		compare(t, encodeFile(t, dir, texts, string(pool), maxLen), tok, texts, maxLen, want)
	}
}

// TestEncodeDebertaExport exports DeBERTa bi-encoders in HF layout (export -format hf) and runs
// the command on the export: one trained with the spm.model tokenizer, encoded from spm.model
// (+ tokenizer_config.json, added_tokens.json: [MASK]) once the export's tokenizer.json is
// removed; one trained with the tokenizer.json tokenizer, encoded from the export's
// tokenizer.json. Embeddings must equal the bi-encoder's (Model.Embed, query tower) within
// roundTripTol.
func TestEncodeDebertaExport(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	texts := unigramTexts(t)
	for _, tc := range []struct {
		name, tokDir string
		drop         string // a file removed from the export
	}{
		{"spm.model", unigramDir, "tokenizer.json"},
		{"tokenizer.json", filepath.Join(unigramDir, "hf"), "spm.model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := tokenize.Load(tc.tokDir)
			if err != nil {
				t.Fatal(err)
			}
			enc, err := encoder.New("deberta-v2", encoder.Sizes{Vocab: tok.VocabSize(), Hidden: 32, Layers: 2, Heads: 4, MaxPositions: 128})
			if err != nil {
				t.Fatal(err)
			}
			if enc, err = encoder.Override(enc, map[string]any{"initializer_range": 0.2}); err != nil {
				t.Fatal(err)
			}
			cfg := &biencoder.Config{Encoder: enc, Pooling: encoder.PoolMean, Shared: true, QueryMaxLen: 40, ToolMaxLen: 40,
				Similarity: "dot", Temperature: 0.05}
			m, err := export.NewBiEncoder(cfg, tok, be, 13)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "hf")
			if _, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out}); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(out, tc.drop)); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			got, err := tokenize.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if got.VocabSize() != tok.VocabSize() || got.MaskID() != tok.MaskID() || got.MaskID() < 0 {
				t.Fatalf("export's tokenizer: %d tokens, [MASK] %d; trained with %d, %d", got.VocabSize(), got.MaskID(), tok.VocabSize(), tok.MaskID())
			}
			want, err := m.Embed(biencoder.QueryTower, texts)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, encodeFile(t, out, texts, "mean", 40), tok, texts, 40, want)
		})
	}
}
