package encoder_test

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/deberta"
	"github.com/toolret/toolret/models/encoder"
	"google.golang.org/protobuf/proto"
)

func TestDebertaNew(t *testing.T) {
	c, err := encoder.New("deberta-v2", encoder.Sizes{Vocab: 40, Hidden: 8, Layers: 2, Heads: 2, MaxPositions: 64})
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelType() != "deberta-v2" || c.Vocab() != 40 || c.Hidden() != 8 || c.Layers() != 2 || c.MaxPositions() != 64 ||
		c.TypeVocab() != 0 || !c.HasPooler() || c.HF().Prefix != "deberta" || c.HF().SequenceClassification != "DebertaV2ForSequenceClassification" {
		t.Errorf("config %s", mustJSON(t, c))
	}
	var f map[string]any
	json.Unmarshal(mustJSON(t, c), &f)
	for k, want := range map[string]any{"model_type": "deberta-v2", "intermediate_size": 32.0, "relative_attention": true,
		"position_buckets": 32.0, "share_att_key": true, "norm_rel_ebd": "layer_norm", "position_biased_input": false,
		"type_vocab_size": 0.0, "layer_norm_eps": 1e-7, "hidden_act": "gelu", "max_relative_positions": -1.0} {
		if f[k] != want {
			t.Errorf("%s = %v, want %v", k, f[k], want)
		}
	}
	if l, _ := f["pos_att_type"].([]any); len(l) != 2 || l[0] != "p2c" || l[1] != "c2p" {
		t.Errorf("pos_att_type %v", f["pos_att_type"])
	}
	def, err := encoder.New("deberta-v2", encoder.Sizes{})
	if err != nil || def.Hidden() != 768 || def.Layers() != 12 || def.Vocab() != 128100 || def.MaxPositions() != 512 {
		t.Fatalf("defaults: %v %v", def, err)
	}
	json.Unmarshal(mustJSON(t, def), &f)
	if f["position_buckets"] != 256.0 || f["intermediate_size"] != 3072.0 {
		t.Errorf("deberta-v3-base defaults: buckets %v, intermediate %v", f["position_buckets"], f["intermediate_size"])
	}
	for _, p := range []int{2, 3} { // too short for buckets: plain clamped relative positions
		c, err := encoder.New("deberta-v2", encoder.Sizes{Vocab: 40, Hidden: 8, Layers: 1, Heads: 2, MaxPositions: p})
		if err != nil {
			t.Fatalf("max positions %d: %v", p, err)
		}
		json.Unmarshal(mustJSON(t, c), &f)
		if f["position_buckets"] != -1.0 {
			t.Errorf("max positions %d: position_buckets %v", p, f["position_buckets"])
		}
	}
	if _, err := encoder.New("deberta-v2", encoder.Sizes{Hidden: 10, Heads: 3}); err == nil || !strings.Contains(err.Error(), "multiple") {
		t.Errorf("bad sizes: %v", err)
	}

	// JSON round trip through the registry, Override, WithPooler, WithDType.
	back, err := encoder.Unmarshal(mustJSON(t, c))
	if err != nil || string(mustJSON(t, back)) != string(mustJSON(t, c)) {
		t.Fatalf("round trip: %v\n%s\n%s", err, mustJSON(t, back), mustJSON(t, c))
	}
	o, err := encoder.Override(c, map[string]any{"pos_att_type": "c2p", "share_att_key": false})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range o.Params() {
		names[p.Name] = true
	}
	if o.ModelType() != "deberta-v2" || !names["encoder.layer.1.attention.self.pos_key_proj.weight"] || names["encoder.layer.0.attention.self.pos_query_proj.weight"] {
		t.Errorf("override: %s", mustJSON(t, o))
	}
	np := c.WithPooler(false)
	for _, p := range np.Params() {
		if strings.HasPrefix(p.Name, "pooler.") {
			t.Errorf("WithPooler(false) has %s", p.Name)
		}
	}
	if !c.HasPooler() || np.HasPooler() {
		t.Error("WithPooler must copy")
	}
	if err := c.WithDType(dtypes.Float64).Init(model.NewStore().RootScope(), 1); err != nil {
		t.Fatal(err)
	}
	type wrapper struct {
		Name    string         `json:"name"`
		Encoder encoder.Config `json:"encoder"`
	}
	b, _ := json.Marshal(wrapper{"m", c})
	var w wrapper
	enc, err := encoder.UnmarshalModel(b, &w)
	if err != nil || enc.ModelType() != "deberta-v2" || w.Name != "m" {
		t.Errorf("UnmarshalModel: %v %v %q", enc, err, w.Name)
	}
}

// TestDebertaLoadHF loads the PyTorch fixture through the registry and runs it with the
// Runner: the ContextPooler (PoolPooler) of the short rows equals PyTorch's.
func TestDebertaLoadHF(t *testing.T) {
	const dir = "../deberta/testdata/v3"
	deberta.Warnings = &strings.Builder{}
	defer func() { deberta.Warnings = os.Stderr }()
	store := model.NewStore()
	cfg, err := encoder.LoadHF(store.RootScope(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ModelType() != "deberta-v2" || !cfg.HasPooler() || encoder.Variable(store, "", "pooler.dense.weight") == nil ||
		encoder.Variable(store, "", "encoder.rel_embeddings.weight") == nil {
		t.Fatalf("loaded %s", mustJSON(t, cfg))
	}
	var exp struct {
		IDs     [][]int32 `json:"ids"`
		Lengths []int     `json:"lengths"`
		Pooler  []float64 `json:"pooler"`
	}
	b, err := os.ReadFile(dir + "/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	r, err := encoder.NewRunner(be, store, "", cfg, encoder.PoolPooler)
	if err != nil {
		t.Fatal(err)
	}
	rows := []int{8, 9, 10} // lengths 17, 2, 1
	seq := exp.Lengths[rows[0]]
	var ids, types, mask []int32
	for _, i := range rows {
		for j := 0; j < seq; j++ {
			ids, types = append(ids, exp.IDs[i][j]), append(types, 0)
			mask = append(mask, map[bool]int32{true: 1}[j < exp.Lengths[i]])
		}
	}
	out, err := r.Call(tensors.FromFlatDataAndDimensions(ids, 3, seq), tensors.FromFlatDataAndDimensions(types, 3, seq), tensors.FromFlatDataAndDimensions(mask, 3, seq))
	if err != nil {
		t.Fatal(err)
	}
	got, h := tensors.MustCopyFlatData[float32](out), cfg.Hidden()
	worst := 0.0
	for k, i := range rows {
		for d := 0; d < h; d++ {
			worst = math.Max(worst, math.Abs(float64(got[k*h+d])-exp.Pooler[i*h+d]))
		}
	}
	if worst > 1e-5 {
		t.Errorf("ContextPooler through encoder.Runner differs from PyTorch by %.2e", worst)
	}

	// SaveHF through the interface writes DebertaV2ForSequenceClassification names.
	out2 := t.TempDir()
	if err := cfg.SaveHF(store.RootScope(), out2, true); err != nil {
		t.Fatal(err)
	}
	store2 := model.NewStore()
	if cfg2, err := encoder.LoadHF(store2.RootScope(), out2); err != nil || !cfg2.HasPooler() || store2.NumVariables() != len(cfg.Params()) {
		t.Fatalf("reload: %v", err)
	}
}

// TestDebertaONNX checks a DeBERTa encoder is an encoder.ONNX and that -format onnx writes a
// DeBERTa bi-encoder with optimum's inputs (no token_type_ids: type_vocab_size is 0) and
// outputs. ONNX Runtime runs the graph in models/deberta's onnx-tagged tests.
func TestDebertaONNX(t *testing.T) {
	c, err := encoder.New("deberta-v2", encoder.Sizes{Vocab: 40, Hidden: 8, Layers: 1, Heads: 2, MaxPositions: 16})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(encoder.ONNX); !ok {
		t.Fatal("deberta does not implement encoder.ONNX")
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := exporttest.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := encoder.New("deberta-v2", encoder.Sizes{Vocab: tok.VocabSize(), Hidden: 16, Layers: 1, Heads: 2, MaxPositions: 64})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &biencoder.Config{Encoder: enc, Pooling: encoder.PoolPooler, Shared: true, QueryMaxLen: 32, ToolMaxLen: 64,
		Similarity: "cosine", Temperature: 0.05}
	m, err := export.NewBiEncoder(cfg, tok, be, 3)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir() + "/onnx"
	if _, err := export.Export(m, export.Options{Format: export.FormatONNX, Out: out}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out + "/model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	var mp protos.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		t.Fatal(err)
	}
	var in, outs []string
	for _, v := range mp.Graph.Input {
		in = append(in, v.Name)
	}
	for _, v := range mp.Graph.Output {
		outs = append(outs, v.Name)
	}
	if !slices.Equal(in, []string{export.InputIDs, export.AttentionMask}) ||
		!slices.Equal(outs, []string{export.OutLastHiddenState, export.OutSentenceEmbedding}) {
		t.Errorf("inputs %v, outputs %v", in, outs)
	}
}

// TestDebertaExportHF exports a DeBERTa bi-encoder in HF layout, reads it back with
// export.LoadHF and checks the embeddings are unchanged; pooler pooling, which
// sentence-transformers would read as BERT's tanh pooler, is refused.
func TestDebertaExportHF(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := exporttest.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := encoder.New("deberta-v2", encoder.Sizes{Vocab: tok.VocabSize(), Hidden: 16, Layers: 2, Heads: 2, MaxPositions: 64})
	if err != nil {
		t.Fatal(err)
	}
	if enc, err = encoder.Override(enc, map[string]any{"initializer_range": 0.2}); err != nil {
		t.Fatal(err)
	}
	texts := []string{"find the weather in paris", "send an email", "x"}
	for _, pool := range []encoder.Pooling{encoder.PoolMean, encoder.PoolPooler} {
		cfg := &biencoder.Config{Encoder: enc, Pooling: pool, Shared: true, QueryMaxLen: 32, ToolMaxLen: 64,
			Similarity: "cosine", Temperature: 0.05}
		m, err := export.NewBiEncoder(cfg, tok, be, 3)
		if err != nil {
			t.Fatal(err)
		}
		out := t.TempDir() + "/hf"
		_, err = export.Export(m, export.Options{Format: export.FormatHF, Out: out})
		if pool == encoder.PoolPooler {
			if err == nil || !strings.Contains(err.Error(), "deberta-v2") {
				t.Errorf("pooler pooling exported: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(out + "/config.json")
		if !strings.Contains(string(b), `"model_type": "deberta-v2"`) || !strings.Contains(string(b), `"DebertaV2Model"`) {
			t.Errorf("config.json: %s", b)
		}
		back, err := export.LoadHF(out, be)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.Embed("", texts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := back.Embed("", texts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			for d := range want[i] {
				if math.Abs(float64(want[i][d]-got[i][d])) > 1e-6 {
					t.Fatalf("text %d: exported and reloaded embedding differs at %d: %v vs %v", i, d, got[i][d], want[i][d])
				}
			}
		}
	}
}
