package classifier

import (
	"encoding/json"
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
	"github.com/toolret/toolret/safetensors"
)

// seqclsDir is the DebertaV2ForSequenceClassification fixture written by
// scripts/deberta/make_head_fixture.py (PyTorch re-implementation of HF's module).
const seqclsDir = "testdata/deberta_seqcls"

// seqclsTol bounds |toolret - PyTorch| on the fixture's logits.
const seqclsTol = 1e-5

type seqclsExpected struct {
	IDs     [][]int32   `json:"ids"`
	Mask    [][]int32   `json:"mask"`
	Lengths []int       `json:"lengths"`
	Labels  []string    `json:"labels"`
	Logits  [][]float64 `json:"logits"`
}

func flat(rows [][]int32) *tensors.Tensor {
	var d []int32
	for _, r := range rows {
		d = append(d, r...)
	}
	return tensors.FromFlatDataAndDimensions(d, len(rows), len(rows[0]))
}

// TestDebertaHeadParity loads the fixture's HF checkpoint (encoder, ContextPooler and
// classifier) and computes Config.Logits on its padded batch (lengths 1 to 128): with pooling
// "pooler" the logits must equal PyTorch's DebertaV2ForSequenceClassification within
// seqclsTol; a [CLS] head over the same weights must not (the ContextPooler matters).
func TestDebertaHeadParity(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(seqclsDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp seqclsExpected
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	enc, err := encoder.LoadHF(store.RootScope(), seqclsDir)
	if err != nil {
		t.Fatal(err)
	}
	if enc.ModelType() != "deberta-v2" || !enc.HasPooler() || enc.TypeVocab() != 0 {
		t.Fatalf("fixture encoder %s, pooler %v, type_vocab_size %d", enc.ModelType(), enc.HasPooler(), enc.TypeVocab())
	}
	f, err := safetensors.Open(filepath.Join(seqclsDir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"weight", "bias"} {
		d, shape, err := f.Float32("classifier." + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.RootScope().At("classifier").CreateVariable(name, tensors.FromFlatDataAndDimensions(d, shape...)); err != nil {
			t.Fatal(err)
		}
	}
	ids, mask := flat(exp.IDs), flat(exp.Mask)
	for _, tc := range []struct {
		pool     encoder.Pooling
		parity   bool    // within seqclsTol of PyTorch
		minDiffs float64 // else at least this far from it
	}{
		{encoder.PoolPooler, true, 0},
		{encoder.PoolCLS, false, 0.5},
		{"", false, 0.5}, // configurations without "pooling": the [CLS] head
	} {
		t.Run(string(HeadPooling(tc.pool))+"/"+string(tc.pool), func(t *testing.T) {
			cfg := &Config{Kind: KindMLC, Encoder: enc, MaxLen: 128, Labels: exp.Labels, LossKind: "bce", Pooling: tc.pool}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			exec, err := model.NewExec(be, store, func(root *model.Scope, ids, mask *Node) *Node {
				return cfg.Logits(root, ids, nil, mask)
			})
			if err != nil {
				t.Fatal(err)
			}
			out, err := encoder.Guard(exec).Call1(ids, mask)
			if err != nil {
				t.Fatal(err)
			}
			got := out.Value().([][]float32)
			if len(got) != len(exp.Logits) {
				t.Fatalf("%d rows, want %d", len(got), len(exp.Logits))
			}
			d := 0.0
			for i := range got {
				for k := range got[i] {
					d = max(d, math.Abs(float64(got[i][k])-exp.Logits[i][k]))
				}
			}
			t.Logf("pooling %q: max |toolret - PyTorch DebertaV2ForSequenceClassification| = %.3g over %d rows (lengths %v)", tc.pool, d, len(got), exp.Lengths)
			if tc.parity && d > seqclsTol {
				t.Errorf("logits differ from PyTorch by %g (> %g)", d, seqclsTol)
			}
			if !tc.parity && d < tc.minDiffs {
				t.Errorf("a %q head is within %g of PyTorch's pooler head: the test cannot tell the heads apart", tc.pool, d)
			}
		})
	}
}

// TestPoolingConfig checks the head pooling of stored configurations: absent means cls (and
// is written back absent), cls and pooler round-trip, pooler needs the encoder's pooler layer,
// a causal encoder (Qwen3) takes mean but not its first token (cls, absent), other poolings
// are refused; DefaultPooling is cls for BERT and pooler for DeBERTa.
func TestPoolingConfig(t *testing.T) {
	bert, err := encoder.New("bert", encoder.Sizes{Vocab: 50, Layers: 1, Hidden: 8, Heads: 2, Intermediate: 16, MaxPositions: 16})
	if err != nil {
		t.Fatal(err)
	}
	deb, err := encoder.New("deberta-v2", encoder.Sizes{Vocab: 50, Layers: 1, Hidden: 8, Heads: 2, Intermediate: 16, MaxPositions: 16})
	if err != nil {
		t.Fatal(err)
	}
	small := encoder.Sizes{Vocab: 50, Layers: 1, Hidden: 8, Heads: 2, Intermediate: 16, MaxPositions: 16}
	qwen, err := encoder.New("qwen3", small)
	if err != nil {
		t.Fatal(err)
	}
	gemma, err := encoder.New("gemma3_text", small) // EmbeddingGemma: bidirectional
	if err != nil {
		t.Fatal(err)
	}
	if DefaultPooling(bert) != encoder.PoolCLS || DefaultPooling(deb) != encoder.PoolPooler {
		t.Errorf("DefaultPooling: bert %q, deberta %q; want cls, pooler", DefaultPooling(bert), DefaultPooling(deb))
	}
	for _, tc := range []struct {
		name    string
		enc     encoder.Config
		pool    encoder.Pooling
		want    encoder.Pooling // HeadPooling after the round trip
		wantErr string
	}{
		{"absent", bert, "", encoder.PoolCLS, ""},
		{"cls", deb, encoder.PoolCLS, encoder.PoolCLS, ""},
		{"pooler", deb, encoder.PoolPooler, encoder.PoolPooler, ""},
		{"bert pooler", bert, encoder.PoolPooler, encoder.PoolPooler, ""},
		{"no pooler layer", deb.WithPooler(false), encoder.PoolPooler, "", "has no pooler layer"},
		{"mean", bert, encoder.PoolMean, encoder.PoolMean, ""},
		{"unknown", bert, "max", "", `head pooling "max": want cls, mean or pooler`},
		{"no pooler, bidirectional", gemma, encoder.PoolPooler, "", "has no pooler layer: use -pooling cls"},
		{"cls, bidirectional decoder", gemma, encoder.PoolCLS, encoder.PoolCLS, ""},
		{"no pooler, causal", qwen, encoder.PoolPooler, "", "has no pooler layer and attends causally"},
		{"cls, causal", qwen, encoder.PoolCLS, "", "attends causally"},
		{"absent, causal", qwen, "", "", "attends causally"},
		{"mean, causal", qwen, encoder.PoolMean, encoder.PoolMean, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Kind: KindQueryType, Encoder: tc.enc, MaxLen: 16, Labels: []string{LabelSingle, LabelMulti}, LossKind: "ce", Pooling: tc.pool}
			err := c.Validate()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Validate: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b := c.Marshal()
			if has := strings.Contains(string(b), `"pooling"`); has != (tc.pool != "") {
				t.Errorf("stored config %s: pooling written %v, want %v", b, has, tc.pool != "")
			}
			back, err := Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			if back.Pooling != tc.pool || HeadPooling(back.Pooling) != tc.want {
				t.Errorf("round trip: pooling %q (head %q), want %q (%q)", back.Pooling, HeadPooling(back.Pooling), tc.pool, tc.want)
			}
		})
	}
}
