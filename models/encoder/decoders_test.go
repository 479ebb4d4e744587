package encoder_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
)

// decoderFixtures are the sentence-transformers directories of scripts/parity/make_qwen3_fixture.py
// and make_gemma3_fixture.py, as the encoder registry loads them.
var decoderFixtures = []struct {
	modelType, dir string
	pooling        encoder.Pooling
	query, doc     string // the prompts of config_sentence_transformers.json
	dense          bool   // the Dense modules belong to the encoder
}{
	{"qwen3", "../qwen3/testdata", encoder.PoolLast,
		"Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:", "", false},
	{"gemma3_text", "../gemma3/testdata", encoder.PoolMean, "task: search result | query: ", "title: none | text: ", true},
}

type decoderExpected struct {
	Texts  []string    `json:"texts"`
	MaxSeq int         `json:"max_seq_length"`
	IDs    [][]int32   `json:"ids"`
	Emb    [][]float64 `json:"embeddings"`
}

func readDecoderExpected(t *testing.T, dir string) *decoderExpected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e decoderExpected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return &e
}

// TestDecoderEncoders loads the Qwen3 and Gemma3 fixtures through the registry (LoadHF by
// model_type, with EmbeddingGemma's Dense modules), reads their pooling and prompts as the
// commands do (STPooling, STPrompts), and checks the registered encoder's Runner (Encode, Pool)
// plus L2 normalisation gives sentence-transformers' embeddings from the recorded ids. It also
// checks neither claims an ONNX graph (export refuses -format onnx for them).
func TestDecoderEncoders(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Skip(err)
	}
	for _, fx := range decoderFixtures {
		t.Run(fx.modelType, func(t *testing.T) {
			dir := filepath.Join(fx.dir, "tiny")
			e := readDecoderExpected(t, fx.dir)
			store := model.NewStore()
			cfg, err := encoder.LoadHF(store.RootScope(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ModelType() != fx.modelType || cfg.HasPooler() || cfg.TypeVocab() != 1 || !encoder.PairsWithOneType(cfg) {
				t.Errorf("config %s: pooler %v, type vocab %d", cfg.ModelType(), cfg.HasPooler(), cfg.TypeVocab())
			}
			if _, ok := cfg.(encoder.ONNX); ok {
				t.Errorf("%s claims an ONNX graph", fx.modelType)
			}
			owns, _ := cfg.(interface{ OwnsSTDense() bool })
			if got := owns != nil && owns.OwnsSTDense(); got != fx.dense {
				t.Errorf("OwnsSTDense = %v, want %v", got, fx.dense)
			}
			p, ok, err := encoder.STPooling(dir)
			if err != nil || !ok || p != fx.pooling {
				t.Errorf("STPooling = %q %v %v, want %q", p, ok, err, fx.pooling)
			}
			q, d, err := encoder.STPrompts(dir)
			if err != nil || q != fx.query || d != fx.doc {
				t.Errorf("STPrompts = %q, %q, %v; want %q, %q", q, d, err, fx.query, fx.doc)
			}
			r, err := encoder.NewRunner(be, store, "", cfg, p)
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for i, ids := range e.IDs {
				n := len(ids)
				mask, types := make([]int32, n), make([]int32, n)
				for j := range mask {
					mask[j] = 1
				}
				out, err := r.Call(tensors.FromFlatDataAndDimensions(ids, 1, n), tensors.FromFlatDataAndDimensions(types, 1, n),
					tensors.FromFlatDataAndDimensions(mask, 1, n))
				if err != nil {
					t.Fatal(err)
				}
				v := tensors.MustCopyFlatData[float32](out)
				norm := 0.0
				for _, x := range v {
					norm += float64(x) * float64(x)
				}
				norm = math.Sqrt(norm)
				for j, x := range v {
					worst = max(worst, math.Abs(float64(x)/norm-e.Emb[i][j]))
				}
			}
			t.Logf("registered encoder, each text alone, normalised: max |go - sentence-transformers| = %.2e", worst)
			if worst > 1e-5 {
				t.Errorf("embeddings differ from sentence-transformers by %.2e (> 1e-5)", worst)
			}
		})
	}
}

// TestDecoderTokenizers: the fixtures' tokenizer.json (byte-level BPE for Qwen3,
// byte-fallback BPE for Gemma3) loads without panicking, fits the model's embedding table
// (FitVocab: Gemma's trailing <mask>, which has no row, is no longer matched in text; Qwen3's
// added tokens, which have rows, still are), and its ids are exactly those
// sentence-transformers feeds the model.
func TestDecoderTokenizers(t *testing.T) {
	for _, fx := range decoderFixtures {
		t.Run(fx.modelType, func(t *testing.T) {
			dir := filepath.Join(fx.dir, "tiny")
			var tok *tokenize.Tokenizer
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("panic: %v", p)
						t.Errorf("tokenize.Load(%s) panicked: %v", dir, p)
					}
				}()
				tok, err = tokenize.Load(dir)
			}()
			if err != nil {
				t.Fatalf("tokenize.Load(%s): %v", dir, err)
			}
			e := readDecoderExpected(t, fx.dir)
			// Gemma's tokenizer, saved by transformers, ends with a <mask> the embedding table
			// has no row for (620 tokens, vocab_size 619): the ids of text fit the table all
			// the same, and once fitted a text spelling it out is plain text.
			cfg, err := encoder.LoadHF(model.NewStore().RootScope(), dir)
			if err != nil {
				t.Fatal(err)
			}
			spelled := "a <mask> b"
			if fx.modelType == "qwen3" {
				spelled = "a <|im_end|> b" // Qwen3's table has rows for its added tokens
			}
			maxID := func() int32 { return slices.Max(tok.Single(spelled, e.MaxSeq)) }
			before := maxID()
			if err := encoder.FitVocab(tok, cfg); err != nil || tok.EmbeddingRows() > tok.VocabSize() {
				t.Errorf("%d tokens, EmbeddingRows %d, vocab_size %d: %v", tok.VocabSize(), tok.EmbeddingRows(), cfg.Vocab(), err)
			}
			after := maxID()
			t.Logf("%d tokens, vocab_size %d; %q: highest id %d, fitted %d", tok.VocabSize(), cfg.Vocab(), spelled, before, after)
			if int(after) >= cfg.Vocab() || (int(before) < cfg.Vocab() && after != before) {
				t.Errorf("%q: highest id %d, fitted to vocab_size %d: %d", spelled, before, cfg.Vocab(), after)
			}
			for i, text := range e.Texts {
				if got := tok.Single(text, e.MaxSeq); !slices.Equal(got, e.IDs[i]) {
					t.Errorf("text %d %q: ids %v, sentence-transformers %v", i, text, got, e.IDs[i])
				}
			}
		})
	}
}

// TestDecoderNew: the registrations' defaults (Qwen3-Embedding-0.6B, EmbeddingGemma-300M),
// sizes, the JSON round trip through the registry and a from-scratch Init.
func TestDecoderNew(t *testing.T) {
	for _, tc := range []struct {
		modelType                     string
		hidden, layers, vocab, maxPos int
	}{
		{"qwen3", 1024, 28, 151669, 32768},
		{"gemma3_text", 768, 24, 262144, 2048},
	} {
		t.Run(tc.modelType, func(t *testing.T) {
			def, err := encoder.New(tc.modelType, encoder.Sizes{})
			if err != nil || def.Hidden() != tc.hidden || def.Layers() != tc.layers || def.Vocab() != tc.vocab || def.MaxPositions() != tc.maxPos {
				t.Fatalf("defaults: %v %v", def, err)
			}
			c, err := encoder.New(tc.modelType, encoder.Sizes{Vocab: 40, Hidden: 16, Layers: 2, Heads: 2, MaxPositions: 64})
			if err != nil {
				t.Fatal(err)
			}
			if c.Hidden() != 16 || c.Layers() != 2 || c.Vocab() != 40 || c.MaxPositions() != 64 || c.ModelType() != tc.modelType {
				t.Errorf("config %s", mustJSON(t, c))
			}
			back, err := encoder.Unmarshal(mustJSON(t, c))
			if err != nil || string(mustJSON(t, back)) != string(mustJSON(t, c)) {
				t.Fatalf("round trip: %v\n%s\n%s", err, mustJSON(t, back), mustJSON(t, c))
			}
			if err := c.WithDType(dtypes.Float64).Init(model.NewStore().RootScope(), 1); err != nil {
				t.Fatal(err)
			}
			if _, err := encoder.Override(c, map[string]any{"num_key_value_heads": 3}); err == nil {
				t.Error("num_key_value_heads 3 of 2 heads accepted")
			}
		})
	}
}
