package export_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/safetensors"
	"github.com/toolret/toolret/tokenize"
)

func goBackend(t testing.TB) compute.Backend {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// sampleTexts returns n texts: ToolLens queries when ../shared is present, else queries and
// tool texts of the embedded default dataset.
func sampleTexts(t testing.TB, n int) []string {
	t.Helper()
	var texts []string
	if d, err := data.Load("../../shared/datasets/toollens"); err == nil {
		for _, q := range d.Queries {
			texts = append(texts, q.Text)
		}
	} else {
		d, err := data.Default()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; len(texts) < n && i < len(d.Queries); i++ {
			texts = append(texts, d.Queries[i].Text, d.Tools[i%len(d.Tools)].Text)
		}
	}
	texts = texts[:min(n, len(texts))]
	texts = append(texts, "", "ünïcödé Straße 東京 weather?!")
	return texts
}

func maxDiff(t testing.TB, a, b [][]float32) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d vs %d rows", len(a), len(b))
	}
	d := 0.0
	for i := range a {
		if len(a[i]) != len(b[i]) {
			t.Fatalf("row %d: %d vs %d values", i, len(a[i]), len(b[i]))
		}
		for k := range a[i] {
			d = max(d, math.Abs(float64(a[i][k]-b[i][k])))
		}
	}
	return d
}

func checkManifest(t *testing.T, dir string) *export.Manifest {
	t.Helper()
	man, err := export.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Files) == 0 || !strings.HasPrefix(man.Toolret, "toolret") {
		t.Fatalf("manifest: %+v", man)
	}
	seen := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if d.IsDir() || d.Name() == export.ManifestFile {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		b, _ := os.ReadFile(p)
		sum := sha256.Sum256(b)
		if man.Files[filepath.ToSlash(rel)] != hex.EncodeToString(sum[:]) {
			t.Errorf("manifest sha256 of %s: %q", rel, man.Files[filepath.ToSlash(rel)])
		}
		seen++
		return nil
	})
	if seen != len(man.Files) {
		t.Errorf("manifest lists %d files, %d on disk", len(man.Files), seen)
	}
	return man
}

// TestHFRoundTrip exports bi-encoders of every pooling, shared and separate, and checks that
// the HF directories load back (export.LoadHF, and encoder.LoadHF + Runner as cmd/encode
// does) with embeddings equal to the model's within 1e-6.
func TestHFRoundTrip(t *testing.T) {
	be := goBackend(t)
	texts := sampleTexts(t, 20)
	for _, tc := range []struct {
		name  string
		o     exporttest.Options
		files []string
	}{
		{"shared-mean-cosine", exporttest.Options{}, []string{"config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "modules.json", "1_Pooling/config.json", "sentence_bert_config.json"}},
		{"separate-cls-dot", exporttest.Options{Pooling: encoder.PoolCLS, Similarity: "dot", Separate: true}, []string{"query/config.json", "tool/model.safetensors", "tool/tokenizer.json", "query/1_Pooling/config.json"}},
		{"shared-pooler-cosine-gelunew", exporttest.Options{Pooling: encoder.PoolPooler, Act: "gelu_new"}, []string{"2_Dense/model.safetensors", "2_Dense/config.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := exporttest.BiEncoder(tc.o, be, 7)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "hf")
			if _, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out}); err != nil {
				t.Fatal(err)
			}
			man := checkManifest(t, out)
			for _, f := range tc.files {
				if _, ok := man.Files[f]; !ok {
					t.Errorf("%s not exported (files %v)", f, man.Files)
				}
			}
			for _, tower := range []string{biencoder.QueryTower, biencoder.ToolTower} {
				want, err := m.Embed(tower, texts)
				if err != nil {
					t.Fatal(err)
				}
				dir, err := man.TowerDir(out, tower)
				if err != nil {
					t.Fatal(err)
				}
				hm, err := export.LoadHF(dir, be)
				if err != nil {
					t.Fatal(err)
				}
				ht, _ := hm.Tower("")
				want2, _ := m.Tower(tower)
				if ht.Pooling != want2.Pooling || ht.Normalize != want2.Normalize {
					t.Fatalf("%s: loaded pooling %s normalize %v, want %s %v", tower, ht.Pooling, ht.Normalize, want2.Pooling, want2.Normalize)
				}
				maxLen := 32
				if tower == biencoder.ToolTower {
					maxLen = 64
				}
				ht.MaxLen = maxLen
				got, err := hm.Embed("", texts)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxDiff(t, want, got); d > 1e-6 {
					t.Errorf("%s tower: export.LoadHF embeddings differ by %g", tower, d)
				}
				// As cmd/encode -model DIR does.
				tok, err := tokenize.Load(dir)
				if err != nil {
					t.Fatal(err)
				}
				store := model.NewStore()
				cfg, err := encoder.LoadHF(store.RootScope(), dir)
				if err != nil {
					t.Fatal(err)
				}
				r, err := encoder.NewRunner(be, store, "", cfg, ht.Pooling)
				if err != nil {
					t.Fatal(err)
				}
				seqs := make([][]int32, len(texts))
				for i, s := range texts {
					seqs[i] = tok.Single(s, maxLen)
				}
				got, err = encoder.Map(tok, seqs, nil, maxLen, 8, r.Call)
				if err != nil {
					t.Fatal(err)
				}
				if ht.Normalize {
					for _, v := range got {
						export.L2Normalize(v)
					}
				}
				d := maxDiff(t, want, got)
				if d > 1e-6 {
					t.Errorf("%s tower: encoder.LoadHF + Runner embeddings differ by %g", tower, d)
				}
				t.Logf("%s tower: max abs diff %.3g", tower, d)
			}
		})
	}
}

// TestRunRoundTrip exports a run (checkpoint on disk) and compares the HF export with the
// run's own embedder (biencoder.LoadRun).
func TestRunRoundTrip(t *testing.T) {
	be := goBackend(t)
	run := filepath.Join(t.TempDir(), "run")
	if err := exporttest.WriteRun(run, exporttest.Options{}, be, 3); err != nil {
		t.Fatal(err)
	}
	m, err := export.LoadModel(run, be)
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != export.KindBiEncoder || m.Fingerprint == "" || !strings.Contains(m.Source, "step-") {
		t.Fatalf("loaded %s from %s, fingerprint %q", m.Kind, m.Source, m.Fingerprint)
	}
	out := filepath.Join(t.TempDir(), "hf")
	man, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := data.Default()
	if man.DataFingerprint != d.Fingerprint() || man.Kind != "biencoder" {
		t.Fatalf("manifest %+v", man)
	}
	e, err := biencoder.LoadRun(run, be)
	if err != nil {
		t.Fatal(err)
	}
	texts := sampleTexts(t, 30)
	want, err := e.Embed(biencoder.QueryTower, texts)
	if err != nil {
		t.Fatal(err)
	}
	hm, err := export.LoadHF(out, be)
	if err != nil {
		t.Fatal(err)
	}
	hm.Towers[0].MaxLen = e.Cfg.QueryMaxLen
	got, err := hm.Embed("", texts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := maxDiff(t, want, got); diff > 1e-6 {
		t.Fatalf("run vs HF export: %g", diff)
	} else {
		t.Logf("run vs HF export: max abs diff %.3g", diff)
	}
	// What cmd/train -init reads.
	tok, err := tokenize.Load(out)
	if err != nil || tok.VocabSize() != e.Tok.VocabSize() {
		t.Fatalf("tokenizer: %v", err)
	}
}

func headModel(t *testing.T, be compute.Backend, labels []string, pool encoder.Pooling, act string) *export.Model {
	t.Helper()
	m, err := exporttest.BiEncoder(exporttest.Options{Pooling: encoder.PoolPooler}, be, 11)
	if err != nil {
		t.Fatal(err)
	}
	h := m.Towers[0].Encoder.Hidden()
	rng := rand.New(rand.NewPCG(1, 2))
	head := &export.Head{Labels: labels, Weight: make([]float32, len(labels)*h), Bias: make([]float32, len(labels)), Pooling: pool, Activation: act}
	for i := range head.Weight {
		head.Weight[i] = float32(rng.NormFloat64())
	}
	for i := range head.Bias {
		head.Bias[i] = float32(rng.NormFloat64())
	}
	m.Kind, m.Head, m.EmbedFn, m.Similarity = export.KindCrossEncoder, head, nil, ""
	m.Towers[0].Normalize = false
	m.Towers[0].MaxLen = 96
	return m
}

// TestHeadMean: a head over the mean of the token states (train -pooling mean) is refused in
// HF layout, whose XxxForSequenceClassification reads the first token, naming the flag and
// leaving nothing behind; ONNX writes it.
func TestHeadMean(t *testing.T) {
	m := headModel(t, goBackend(t), []string{"a", "b"}, encoder.PoolMean, "softmax")
	out := filepath.Join(t.TempDir(), "hf")
	_, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out})
	if err == nil || !strings.Contains(err.Error(), "-pooling mean") || !strings.Contains(err.Error(), "HF layout") {
		t.Fatalf("Export = %v, want the refusal naming -pooling mean", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused export left %s behind (%v)", out, err)
	}
	if _, err := export.Export(m, export.Options{Format: export.FormatONNX, Out: filepath.Join(t.TempDir(), "onnx")}); err != nil {
		t.Errorf("ONNX export of a mean head: %v", err)
	}
}

// TestHFHeadMPNet: a head over an MPNet encoder is refused in HF layout (naming why), and an
// MPNet bi-encoder over its pooler (BERT's dense + tanh) is written.
func TestHFHeadMPNet(t *testing.T) {
	be := goBackend(t)
	m, err := exporttest.BiEncoder(exporttest.Options{Arch: "mpnet", Pooling: encoder.PoolPooler}, be, 11)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := export.Export(m, export.Options{Format: export.FormatHF, Out: filepath.Join(t.TempDir(), "bi")}); err != nil {
		t.Fatalf("MPNet bi-encoder over its pooler: %v", err)
	}
	h := m.Towers[0].Encoder.Hidden()
	m.Kind, m.EmbedFn, m.Similarity = export.KindCrossEncoder, nil, ""
	m.Head = &export.Head{Labels: []string{"relevant"}, Weight: make([]float32, h), Bias: make([]float32, 1), Pooling: encoder.PoolPooler}
	out := filepath.Join(t.TempDir(), "ce")
	_, err = export.Export(m, export.Options{Format: export.FormatHF, Out: out})
	if err == nil || !strings.Contains(err.Error(), "MPNetForSequenceClassification") {
		t.Fatalf("Export = %v, want the refusal naming MPNetForSequenceClassification", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused export left %s behind (%v)", out, err)
	}
}

// TestHFHead exports heads as BertForSequenceClassification and loads them back: over the
// pooler or over [CLS] (the cross-encoder's head; HF applies a scaled identity pooler), one
// logit (a reranker) or several labels.
func TestHFHead(t *testing.T) {
	be := goBackend(t)
	for _, tc := range []struct {
		labels []string
		pool   encoder.Pooling
		act    string
	}{
		{[]string{"relevant"}, encoder.PoolPooler, ""},
		{[]string{"a", "b", "c"}, encoder.PoolPooler, "softmax"},
		{[]string{"relevant"}, encoder.PoolCLS, "sigmoid"},
		{[]string{"x", "y"}, encoder.PoolCLS, "sigmoid"},
	} {
		name := fmt.Sprintf("%d-%s-%s", len(tc.labels), tc.pool, tc.act)
		t.Run(name, func(t *testing.T) {
			m := headModel(t, be, tc.labels, tc.pool, tc.act)
			out := filepath.Join(t.TempDir(), "ce")
			if _, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out}); err != nil {
				t.Fatal(err)
			}
			checkManifest(t, out)
			if _, err := os.Stat(filepath.Join(out, "modules.json")); err == nil {
				t.Error("sentence-transformers files written for a head model")
			}
			hm, err := export.LoadHF(out, be)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{true: export.KindCrossEncoder, false: export.KindClassifier}[len(tc.labels) == 1]; hm.Kind != want || strings.Join(hm.Head.Labels, ",") != strings.Join(tc.labels, ",") {
				t.Fatalf("loaded kind %s labels %v", hm.Kind, hm.Head.Labels)
			}
			if hm.Head.Pooling != tc.pool || (len(tc.labels) > 1 && hm.Head.Activation != map[string]string{"": "softmax"}[tc.act]+tc.act) {
				t.Fatalf("loaded head pooling %s activation %s", hm.Head.Pooling, hm.Head.Activation)
			}
			hm.Towers[0].MaxLen = 96
			a := sampleTexts(t, 10)
			b := make([]string, len(a))
			for i := range b {
				b[i] = a[len(a)-1-i]
			}
			want, err := m.Score(a, b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := hm.Score(a, b)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff(t, want, got); d > 1e-6 {
				t.Fatalf("scores differ by %g", d)
			}
			if tc.pool == encoder.PoolCLS {
				// What transformers computes, in float64 (an accurate tanh, as PyTorch's):
				// the exported pooler (scaled identity + tanh), then the exported classifier.
				f, err := safetensors.Open(filepath.Join(out, "model.safetensors"))
				if err != nil {
					t.Fatal(err)
				}
				pw, _, _ := f.Float32("bert.pooler.dense.weight")
				cw, _, _ := f.Float32("classifier.weight")
				cb, _, _ := f.Float32("classifier.bias")
				cls, err := hm.Pooled(a, b, encoder.PoolCLS)
				if err != nil {
					t.Fatal(err)
				}
				h, n := len(cls[0]), len(tc.labels)
				got := make([][]float32, len(cls))
				for i, x := range cls {
					got[i] = make([]float32, n)
					for l := 0; l < n; l++ {
						s := float64(cb[l])
						for k := range x {
							s += float64(cw[l*h+k]) * math.Tanh(float64(pw[k*h+k])*float64(x[k]))
						}
						got[i][l] = float32(s)
					}
				}
				d := maxDiff(t, want, got)
				t.Logf("HF pooler route: max abs logit diff %.3g", d)
				if d > 2e-6 { // README, "Export": measured 1.9e-6
					t.Fatalf("HF pooler route differs by %g (> 2e-6)", d)
				}
			}
		})
	}
}

// TestHeadCheckpoint loads a cross-encoder checkpoint (an encoder + /classifier over [CLS],
// crossencoder.json) through the registry, with the encoder stored under "encoder" and, as
// checkpoints written before encoders were pluggable have it, under "bert".
func TestHeadCheckpoint(t *testing.T) {
	be := goBackend(t)
	tok, err := exporttest.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	bc, err := exporttest.Config(exporttest.Options{}, tok.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	cfg := bc.Encoder
	store := model.NewStore()
	if err := cfg.Init(store.RootScope(), 4); err != nil {
		t.Fatal(err)
	}
	h := cfg.Hidden()
	w := make([]float32, h)
	for i := range w {
		w[i] = float32(i%7) / 10
	}
	if _, err := store.Scope("/classifier").CreateVariable("weight", tensors.FromFlatDataAndDimensions(w, 1, h)); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Scope("/classifier").CreateVariable("bias", tensors.FromFlatDataAndDimensions([]float32{0.5}, 1)); err != nil {
		t.Fatal(err)
	}
	tokDir := t.TempDir()
	tok.Save(tokDir)
	for _, key := range []string{"encoder", "bert"} {
		t.Run(key, func(t *testing.T) {
			run := t.TempDir()
			files := map[string][]byte{}
			for _, f := range []string{"tokenizer.json", "vocab.txt", "tokenizer_config.json"} {
				files[f], _ = os.ReadFile(filepath.Join(tokDir, f))
			}
			cb, _ := json.Marshal(map[string]any{key: cfg, "max_len": 80, "loss": "bce"})
			files["crossencoder.json"] = cb
			if _, err := checkpoints.Save(run, store, checkpoints.Manifest{Step: 2}, files); err != nil {
				t.Fatal(err)
			}
			m, err := export.LoadModel(run, be)
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind != export.KindCrossEncoder || m.Head == nil || m.Head.Pooling != encoder.PoolCLS || m.Towers[0].MaxLen != 80 || m.Head.Labels[0] != "relevant" {
				t.Fatalf("loaded %+v", m)
			}
			out := filepath.Join(t.TempDir(), "ce")
			if _, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out}); err != nil {
				t.Fatal(err)
			}
			hm, err := export.LoadHF(out, be)
			if err != nil {
				t.Fatal(err)
			}
			hm.Towers[0].MaxLen = 80
			q, d := []string{"weather in paris", "book a flight"}, []string{"get the weather forecast", "flight search api"}
			want, _ := m.Score(q, d)
			got, err := hm.Score(q, d)
			if err != nil {
				t.Fatal(err)
			}
			if diff := maxDiff(t, want, got); diff > 1e-6 {
				t.Fatalf("scores differ by %g", diff)
			}
		})
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestExportFailures checks that bad models and bad outputs fail with a clear error and
// leave nothing behind.
func TestExportFailures(t *testing.T) {
	be := goBackend(t)
	// A tokenizer with more tokens than any test model's embedding table (a smaller one is fine:
	// HF checkpoints pad their tables).
	words := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]"}
	for i := range 5000 {
		words = append(words, fmt.Sprintf("w%d", i))
	}
	other, err := tokenize.New(words, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		edit   func(m *export.Model, parent, out string) string // returns the output path
		format string
		force  bool
		want   string
	}{
		{"vocab-mismatch", func(m *export.Model, _, out string) string { m.Tok = other; return out }, "hf", false, "encoder tower: tokenizer has 5004 tokens but the model's vocab_size is"},
		{"bad-config", func(m *export.Model, _, out string) string {
			b, _ := m.Towers[0].Encoder.MarshalJSON()
			var f map[string]any
			json.Unmarshal(b, &f)
			f["num_attention_heads"] = 5
			b, _ = json.Marshal(f)
			c, err := encoder.Unmarshal(b) // not validated
			if err != nil {
				t.Fatal(err)
			}
			m.Towers[0].Encoder = c
			return out
		}, "onnx", false, "not a multiple of num_attention_heads"},
		{"max-len", func(m *export.Model, _, out string) string { m.Towers[0].MaxLen = 1000; return out }, "hf", false, "max length 1000"},
		{"non-empty-out", func(m *export.Model, _, out string) string {
			os.MkdirAll(out, 0o755)
			os.WriteFile(filepath.Join(out, "keep.txt"), []byte("mine"), 0o644)
			return out
		}, "hf", false, "exists and is not empty (use -force"},
		{"out-is-file", func(m *export.Model, _, out string) string { os.WriteFile(out, []byte("x"), 0o644); return out }, "hf", true, "is not a directory"},
		{"out-is-symlink", func(m *export.Model, parent, out string) string {
			target := filepath.Join(parent, "elsewhere")
			os.MkdirAll(target, 0o755)
			os.Symlink(target, out)
			return out
		}, "hf", true, "is a symbolic link"},
		{"parent-is-file", func(m *export.Model, parent, _ string) string {
			os.WriteFile(filepath.Join(parent, "file"), nil, 0o644)
			return filepath.Join(parent, "file", "missing", "out")
		}, "hf", false, "file is not a directory"},
		{"format", func(m *export.Model, _, out string) string { return out }, "tflite", false, `unknown format "tflite"`},
		{"head-activation", func(m *export.Model, _, out string) string {
			h := m.Towers[0].Encoder.Hidden()
			m.Kind, m.Head = export.KindCrossEncoder, &export.Head{Labels: []string{"r"}, Weight: make([]float32, h), Bias: []float32{0}, Activation: "relu"}
			return out
		}, "hf", false, `head activation "relu"`},
		{"head-shape", func(m *export.Model, _, out string) string {
			m.Kind, m.Head = export.KindCrossEncoder, &export.Head{Labels: []string{"r"}, Weight: make([]float32, 3), Bias: []float32{0}}
			return out
		}, "onnx", false, "want weight [1, 32]"},
		{"index-of-head", func(m *export.Model, _, out string) string {
			h := m.Towers[0].Encoder.Hidden()
			m.Kind, m.Head = export.KindCrossEncoder, &export.Head{Labels: []string{"r"}, Weight: make([]float32, h), Bias: []float32{0}}
			return out
		}, "index", false, "needs a bi-encoder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := exporttest.BiEncoder(exporttest.Options{Pooling: encoder.PoolPooler}, be, 1)
			if err != nil {
				t.Fatal(err)
			}
			parent := t.TempDir()
			out := tc.edit(m, parent, filepath.Join(parent, "out"))
			before := listDir(t, parent)
			_, err = export.Export(m, export.Options{Format: tc.format, Out: out, Force: tc.force})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if after := listDir(t, parent); strings.Join(after, ",") != strings.Join(before, ",") {
				t.Fatalf("directory changed: %v -> %v", before, after)
			}
			if tc.name == "non-empty-out" {
				if names := listDir(t, out); len(names) != 1 {
					t.Fatalf("output changed: %v", names)
				}
			}
		})
	}
}

// TestExportForce replaces a non-empty output with -force, and an empty one without.
func TestExportForce(t *testing.T) {
	be := goBackend(t)
	m, err := exporttest.BiEncoder(exporttest.Options{}, be, 1)
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	os.MkdirAll(out, 0o755)
	if _, err := export.Export(m, export.Options{Format: "hf", Out: out}); err != nil {
		t.Fatalf("empty existing dir: %v", err)
	}
	os.WriteFile(filepath.Join(out, "stale.txt"), []byte("old"), 0o644)
	if _, err := export.Export(m, export.Options{Format: "onnx", Out: out + "/", Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "stale.txt")); err == nil {
		t.Fatal("-force kept the old contents")
	}
	if _, err := os.Stat(filepath.Join(out, "model.onnx")); err != nil {
		t.Fatal(err)
	}
	if names := listDir(t, parent); len(names) != 1 {
		t.Fatalf("leftovers beside the output: %v", names)
	}
}

// TestIndex exports the tool index of the default dataset and checks it against the model.
func TestIndex(t *testing.T) {
	be := goBackend(t)
	m, err := exporttest.BiEncoder(exporttest.Options{Separate: true}, be, 5)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "index")
	man, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	checkManifest(t, out)
	d, _ := data.Default()
	recs, flat, dim, meta, err := export.ReadIndexFiles(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(d.Tools) || dim != 32 || man.Tools != len(d.Tools) || man.DataFingerprint != d.Fingerprint() || meta["similarity"] != "cosine" {
		t.Fatalf("%d records, dim %d, manifest %+v, metadata %v", len(recs), dim, man, meta)
	}
	if recs[3].ID != d.Tools[3].ID || recs[3].Text != d.Tools[3].Text || recs[3].ToolName != d.Tools[3].ToolName {
		t.Fatalf("record 3: %+v", recs[3])
	}
	want, err := m.Embed(biencoder.ToolTower, []string{d.Tools[3].Text})
	if err != nil {
		t.Fatal(err)
	}
	if diff := maxDiff(t, want, [][]float32{flat[3*dim : 4*dim]}); diff > 1e-6 {
		t.Fatalf("tool 3 embedding differs by %g", diff)
	}
	qdir, err := man.TowerDir(out, biencoder.QueryTower)
	if err != nil {
		t.Fatal(err)
	}
	qm, err := export.LoadHF(qdir, be)
	if err != nil {
		t.Fatal(err)
	}
	texts := sampleTexts(t, 5)
	want, _ = m.Embed(biencoder.QueryTower, texts)
	got, err := qm.Embed("", texts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := maxDiff(t, want, got); diff > 1e-6 {
		t.Fatalf("query tower differs by %g", diff)
	}
}

// TestCheckSafetensorsPython runs scripts/export/check_safetensors.py (numpy + json only) on
// exported bi-encoder and cross-encoder directories, when /usr/bin/python3 has numpy.
func TestCheckSafetensorsPython(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Skipf("%s with numpy not available (apt-get install python3-numpy): %v", py, err)
	}
	be := goBackend(t)
	bi, err := exporttest.BiEncoder(exporttest.Options{Pooling: encoder.PoolPooler}, be, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*export.Model{bi, headModel(t, be, []string{"relevant"}, encoder.PoolCLS, "sigmoid"), headModel(t, be, []string{"a", "b"}, encoder.PoolPooler, "")} {
		out := filepath.Join(t.TempDir(), "hf")
		if _, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out}); err != nil {
			t.Fatal(err)
		}
		res, err := exec.Command(py, "../scripts/export/check_safetensors.py", out).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", m.Kind, err, res)
		}
		t.Logf("%s: %s", m.Kind, strings.TrimSpace(string(res)))
	}
	// A broken file must be reported.
	out := filepath.Join(t.TempDir(), "hf")
	if _, err := export.Export(bi, export.Options{Format: export.FormatHF, Out: out}); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(out, "config.json"))
	os.WriteFile(filepath.Join(out, "config.json"), []byte(strings.Replace(string(cfg), `"intermediate_size": 64`, `"intermediate_size": 65`, 1)), 0o644)
	if res, err := exec.Command(py, "../scripts/export/check_safetensors.py", out).CombinedOutput(); err == nil || !strings.Contains(string(res), "intermediate.dense.weight: shape") {
		t.Fatalf("mismatch not reported: %v\n%s", err, res)
	}
}
