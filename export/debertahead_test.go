package export_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/safetensors"
)

// headCase is a head model checkpoint as cmd/train leaves it.
type headCase struct {
	name    string
	arch    string // encoder model_type
	types   int    // deberta: type_vocab_size (0 as v3, 2 as -arch deberta pair models)
	kind    string // export.KindClassifier or export.KindCrossEncoder
	labels  []string
	loss    string
	pool    encoder.Pooling
	wantErr string // export -format hf must fail with this
}

var headCases = []headCase{
	{name: "deberta-querytype-pooler", arch: "deberta-v2", kind: export.KindClassifier, labels: []string{classifier.LabelSingle, classifier.LabelMulti}, loss: "ce", pool: encoder.PoolPooler},
	{name: "deberta-mlc-softmax-pooler", arch: "deberta-v2", kind: export.KindClassifier, labels: []string{"t1", "t2", "t3", "t4"}, loss: "softmax", pool: encoder.PoolPooler},
	{name: "deberta-crossencoder-pooler-types2", arch: "deberta-v2", types: 2, kind: export.KindCrossEncoder, loss: "bce", pool: encoder.PoolPooler},
	{name: "deberta-crossencoder-pooler-notypes", arch: "deberta-v2", kind: export.KindCrossEncoder, loss: "listwise", pool: encoder.PoolPooler},
	{name: "bert-classifier-pooler", arch: "bert", kind: export.KindClassifier, labels: []string{"x", "y"}, loss: "bce", pool: encoder.PoolPooler},
	{name: "deberta-classifier-cls", arch: "deberta-v2", kind: export.KindClassifier, labels: []string{"a", "b"}, loss: "ce", pool: encoder.PoolCLS,
		wantErr: "train the model with -pooling pooler"},
}

// writeHeadRun writes a checkpoint of tc's model (tiny random encoder, random head) into a new
// run directory and returns it.
func writeHeadRun(t *testing.T, tc headCase) string {
	t.Helper()
	tok, err := exporttest.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := encoder.New(tc.arch, encoder.Sizes{Vocab: tok.VocabSize(), Hidden: 32, Layers: 2, Heads: 4, Intermediate: 64, MaxPositions: 128})
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]any{"initializer_range": 0.2}
	if tc.arch == "deberta-v2" {
		fields["type_vocab_size"] = tc.types
	}
	if enc, err = encoder.Override(enc, fields); err != nil {
		t.Fatal(err)
	}
	// As training leaves it: pooler weights only when the head reads them.
	enc = enc.WithPooler(tc.pool == encoder.PoolPooler)
	store := model.NewStore()
	if err := enc.Init(store.RootScope(), 9); err != nil {
		t.Fatal(err)
	}
	n := max(len(tc.labels), 1)
	rng := rand.New(rand.NewPCG(4, 5))
	w, b := make([]float32, n*enc.Hidden()), make([]float32, n)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	for i := range b {
		b[i] = float32(rng.NormFloat64())
	}
	head := store.RootScope().At("classifier")
	if _, err := head.CreateVariable("weight", tensors.FromFlatDataAndDimensions(w, n, enc.Hidden())); err != nil {
		t.Fatal(err)
	}
	if _, err := head.CreateVariable("bias", tensors.FromFlatDataAndDimensions(b, n)); err != nil {
		t.Fatal(err)
	}
	var name string
	var cfg []byte
	if tc.kind == export.KindClassifier {
		kind := classifier.KindMLC
		if tc.loss == "ce" {
			kind = classifier.KindQueryType
		}
		c := &classifier.Config{Kind: kind, Encoder: enc, MaxLen: 96, Labels: tc.labels, LossKind: tc.loss, Pooling: tc.pool}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		name, cfg = classifier.ConfigFile, c.Marshal()
	} else {
		c := &crossencoder.Config{Encoder: enc, MaxLen: 96, LossKind: tc.loss, Pooling: tc.pool}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		name, cfg = crossencoder.ConfigFile, c.Marshal()
	}
	run := filepath.Join(t.TempDir(), "run")
	tokDir := t.TempDir()
	if err := tok.Save(tokDir); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{name: cfg}
	for _, f := range []string{"tokenizer.json", "vocab.txt", "tokenizer_config.json"} {
		if files[f], err = os.ReadFile(filepath.Join(tokDir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := checkpoints.Save(run, store, checkpoints.Manifest{Step: 1}, files); err != nil {
		t.Fatal(err)
	}
	return run
}

// toolretScores scores texts (pairs for cross-encoders) with the model kind's own code
// (classifier.Model probabilities, crossencoder.Model sigmoid scores), the reference of every
// export.
func toolretScores(t *testing.T, be compute.Backend, run, kind string, a, b []string) [][]float32 {
	t.Helper()
	if kind == export.KindClassifier {
		m, err := classifier.LoadRun(run, be)
		if err != nil {
			t.Fatal(err)
		}
		p, err := m.Probabilities(a)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	m, err := crossencoder.LoadRun(run, be, b)
	if err != nil {
		t.Fatal(err)
	}
	pairs := make([]crossencoder.Pair, len(a))
	for i := range pairs {
		pairs[i] = crossencoder.Pair{Query: i, Tool: i}
	}
	s, err := m.ScorePairs(context.Background(), a, pairs)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(s))
	for i, v := range s {
		out[i] = []float32{v}
	}
	return out
}

// headProbabilities applies a head's activation to logits as toolret does.
func headProbabilities(h *export.Head, logits [][]float32) [][]float32 {
	out := make([][]float32, len(logits))
	for i, l := range logits {
		p := probabilities(l, len(l) == 1 || h.Activation == "sigmoid")
		out[i] = make([]float32, len(p))
		for k, v := range p {
			out[i][k] = float32(v)
		}
	}
	return out
}

// TestHeadPoolingExport exports checkpoints of heads over the pooler (DeBERTa's ContextPooler,
// BERT's tanh pooler) as the encoder's XxxForSequenceClassification and loads them back: the
// loaded head must read the pooler, config.json must carry the architecture, labels and
// DeBERTa's pooler fields, the tensors HF's names, and the scores must equal the checkpoint's
// (export's reference) within 1e-6 and toolret's own model code (classifier, cross-encoder)
// within 1e-6. A [CLS] head over DeBERTa is refused, naming -pooling pooler.
func TestHeadPoolingExport(t *testing.T) {
	be := goBackend(t)
	texts := sampleTexts(t, 12)
	docs := make([]string, len(texts))
	for i := range docs {
		docs[i] = texts[(i*5+2)%len(texts)]
	}
	for _, tc := range headCases {
		t.Run(tc.name, func(t *testing.T) {
			run := writeHeadRun(t, tc)
			m, err := export.LoadModel(run, be)
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind != tc.kind || m.Head.Pooling != tc.pool {
				t.Fatalf("loaded %s with head pooling %q; want %s, %q", m.Kind, m.Head.Pooling, tc.kind, tc.pool)
			}
			out := filepath.Join(t.TempDir(), "hf")
			_, err = export.Export(m, export.Options{Format: export.FormatHF, Out: out})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("export: %v, want an error containing %q", err, tc.wantErr)
				}
				if _, serr := os.Stat(out); serr == nil {
					t.Errorf("a refused export left %s behind", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg := jsonMap(t, filepath.Join(out, "config.json"))
			arch := m.Towers[0].Encoder.HF().SequenceClassification
			if a, _ := cfg["architectures"].([]any); len(a) != 1 || a[0] != arch {
				t.Errorf("architectures %v, want [%s]", cfg["architectures"], arch)
			}
			if _, ok := cfg["toolret_head"]; ok {
				t.Error("a pooler head carries toolret_head (the scaled identity stand-in)")
			}
			labels := tc.labels
			if tc.kind == export.KindCrossEncoder {
				labels = []string{"relevant"}
			}
			if id2, _ := cfg["id2label"].(map[string]any); len(id2) != len(labels) || id2["0"] != labels[0] {
				t.Errorf("id2label %v, want %v", cfg["id2label"], labels)
			}
			prefix := m.Towers[0].Encoder.HF().Prefix
			poolerName := prefix + ".pooler.dense.weight" // BertForSequenceClassification: the pooler is in bert.*
			if tc.arch == "deberta-v2" {
				poolerName = "pooler.dense.weight" // DebertaV2ForSequenceClassification: outside deberta.*
				if cfg["pooler_hidden_size"] != 32.0 || cfg["pooler_hidden_act"] != "gelu" || cfg["pooler_dropout"] == nil || cfg["type_vocab_size"] != float64(tc.types) {
					t.Errorf("config.json pooler_hidden_size %v, pooler_hidden_act %v, pooler_dropout %v, type_vocab_size %v",
						cfg["pooler_hidden_size"], cfg["pooler_hidden_act"], cfg["pooler_dropout"], cfg["type_vocab_size"])
				}
			}
			f, err := safetensors.Open(filepath.Join(out, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			names := f.Names()
			for _, want := range []string{poolerName, strings.Replace(poolerName, "weight", "bias", 1), "classifier.weight", "classifier.bias", prefix + ".embeddings.word_embeddings.weight"} {
				if !slices.Contains(names, want) {
					t.Errorf("model.safetensors has no %s (has %d tensors)", want, len(names))
				}
			}
			pw, _, _ := f.Float32(poolerName)
			sw, err := m.Store.GetVariable("/pooler/dense/weight").Value()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pw, tensors.MustCopyFlatData[float32](sw)) {
				t.Error("the exported pooler is not the model's pooler")
			}

			hm, err := export.LoadHF(out, be)
			if err != nil {
				t.Fatal(err)
			}
			if hm.Kind != tc.kind || hm.Head.Pooling != encoder.PoolPooler || !slices.Equal(hm.Head.Labels, labels) {
				t.Fatalf("loaded back %s, head pooling %q, labels %v", hm.Kind, hm.Head.Pooling, hm.Head.Labels)
			}
			hm.Towers[0].MaxLen = 96
			var b []string
			if tc.kind == export.KindCrossEncoder {
				b = docs
			}
			want, err := m.Score(texts, b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := hm.Score(texts, b)
			if err != nil {
				t.Fatal(err)
			}
			dLogits := maxDiff(t, want, got)
			dModel := maxDiff(t, toolretScores(t, be, run, tc.kind, texts, b), headProbabilities(hm.Head, got))
			t.Logf("%s: HF round trip max abs logit diff %.3g; vs toolret's %s code (probabilities) %.3g", arch, dLogits, tc.kind, dModel)
			if dLogits > 1e-6 || dModel > 1e-6 {
				t.Errorf("round trip differs: logits %g, probabilities vs toolret %g (> 1e-6)", dLogits, dModel)
			}
		})
	}
}

// TestDebertaSeqClsCheckpoint loads models/classifier's DebertaV2ForSequenceClassification
// fixture (written by scripts/deberta/make_head_fixture.py with HF's tensor names: deberta.*,
// pooler.dense.*, classifier.*) with export.LoadHF, as a hub fine-tune: a classifier whose
// head reads the ContextPooler, with the fixture's labels, whose logits on the fixture's batch
// equal PyTorch's within 1e-5.
func TestDebertaSeqClsCheckpoint(t *testing.T) {
	be := goBackend(t)
	src := "../models/classifier/testdata/deberta_seqcls"
	dir := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := exporttest.Tokenizer() // 600 tokens: the fixture's table has 640 rows
	if err != nil {
		t.Fatal(err)
	}
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	var exp struct {
		IDs    [][]int32   `json:"ids"`
		Mask   [][]int32   `json:"mask"`
		Labels []string    `json:"labels"`
		Logits [][]float64 `json:"logits"`
	}
	b, err := os.ReadFile(filepath.Join(src, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	hm, err := export.LoadHF(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	if hm.Kind != export.KindClassifier || hm.Head.Pooling != encoder.PoolPooler || hm.Head.Activation != "softmax" || !slices.Equal(hm.Head.Labels, exp.Labels) {
		t.Fatalf("loaded %s, head pooling %q, activation %q, labels %v", hm.Kind, hm.Head.Pooling, hm.Head.Activation, hm.Head.Labels)
	}
	tw := hm.Towers[0]
	r, err := encoder.NewRunner(be, hm.Store, tw.Base, tw.Encoder, hm.Head.Pooling)
	if err != nil {
		t.Fatal(err)
	}
	flat := func(rows [][]int32) *tensors.Tensor {
		var d []int32
		for _, r := range rows {
			d = append(d, r...)
		}
		return tensors.FromFlatDataAndDimensions(d, len(rows), len(rows[0]))
	}
	pooled, err := r.Call(flat(exp.IDs), tensors.FromFlatDataAndDimensions(make([]int32, len(exp.IDs)*len(exp.IDs[0])), len(exp.IDs), len(exp.IDs[0])), flat(exp.Mask))
	if err != nil {
		t.Fatal(err)
	}
	got := hm.Head.Logits(pooled.Value().([][]float32))
	d := 0.0
	for i := range got {
		for k := range got[i] {
			d = max(d, math.Abs(float64(got[i][k])-exp.Logits[i][k]))
		}
	}
	t.Logf("export.LoadHF of a DebertaV2ForSequenceClassification checkpoint: max |logits - PyTorch| = %.3g", d)
	if d > 1e-5 {
		t.Errorf("logits differ from PyTorch by %g (> 1e-5)", d)
	}
}
