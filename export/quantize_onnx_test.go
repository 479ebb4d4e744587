//go:build onnx

package export_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
)

// int8MinCos bounds the tiny random BERT's int8 embeddings: each within cosine 0.99 of its
// fp32 one (measured: >= 0.999 per channel, >= 0.998 per matrix).
const int8MinCos = 0.99

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// onnxOrSkip opens the onnx backend, skipping without ONNX Runtime.
func onnxOrSkip(t *testing.T) *export.Model {
	t.Helper()
	be, err := backend.Open("onnx")
	if err != nil {
		t.Skipf("no ONNX Runtime (scripts/install-onnxruntime.sh): %v", err)
	}
	dir := filepath.Join(t.TempDir(), "hf")
	if err := exporttest.WriteHF(dir, exporttest.Options{Hidden: 64, Heads: 4}, be, 3); err != nil {
		t.Fatal(err)
	}
	m, err := export.LoadHF(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkQuantized quantizes m's weights with q and checks that its tool embeddings of texts
// stay within minCos (cosine) of fp32's and differ from them (the int8 graph ran).
func checkQuantized(t *testing.T, m *export.Model, q export.Quantization, texts []string, fp32 [][]float32, minCos float64) {
	t.Helper()
	if err := m.Quantize(q); err != nil {
		t.Fatal(err)
	}
	got, err := m.Embed(biencoder.ToolTower, texts)
	if err != nil {
		t.Fatal(err)
	}
	worst, sum, diff := 1.0, 0.0, 0.0
	for i := range texts {
		c := cosine(got[i], fp32[i])
		worst, sum = min(worst, c), sum+c
		for j := range got[i] {
			diff = max(diff, math.Abs(float64(got[i][j]-fp32[i][j])))
		}
	}
	t.Logf("%s %s, %d texts: cosine to fp32 min %.5f, mean %.5f; max |int8 - fp32| %.3g",
		m.Towers[0].Encoder.ModelType(), q, len(texts), worst, sum/float64(len(texts)), diff)
	if worst < minCos || diff == 0 {
		t.Errorf("%s: min cosine %.5f (want >= %v), max difference %g (want > 0: the int8 graph ran)", q, worst, minCos, diff)
	}
}

// TestQuantizedEmbeddingsONNX embeds texts with a tiny BERT fixture in fp32 and in int8 (both
// granularities) on ONNX Runtime: every int8 embedding within int8MinCos of its fp32 one, the
// token states of encode's -pooling none as well, and back to fp32 with QuantNone.
func TestQuantizedEmbeddingsONNX(t *testing.T) {
	m := onnxOrSkip(t)
	texts := []string{"search the web for recent news", "convert a currency amount", "get the weather forecast for a city tomorrow", "x"}
	fp32, err := m.Embed(biencoder.ToolTower, texts)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []export.Quantization{export.QuantInt8, export.QuantInt8Tensor} {
		checkQuantized(t, m, q, texts, fp32, int8MinCos)
		tw, _ := m.Tower(biencoder.ToolTower)
		states, err := export.NewONNXCall(m.Backend, m.Store, tw.Base, tw.Encoder, encoder.PoolNone, q)
		if err != nil {
			t.Fatal(err)
		}
		ids := [][]int32{m.Tok.Single(texts[0], 16)}
		rows, err := encoder.Map(m.Tok, ids, nil, 16, 1, states)
		if err != nil {
			t.Fatal(err)
		}
		if h := tw.Encoder.Hidden(); len(rows[0]) != 16*h {
			t.Errorf("%s token states: %d values, want 16 padded tokens of %d", q, len(rows[0]), h)
		}
	}
	if err := m.Quantize(export.QuantNone); err != nil {
		t.Fatal(err)
	}
	back, err := m.Embed(biencoder.ToolTower, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range back {
		if c := cosine(back[i], fp32[i]); c < 1-1e-6 {
			t.Errorf("text %d back in fp32: cosine %v to the first fp32 run", i, c)
		}
	}
}

// TestQuantizedMiniLMONNX checks int8 all-MiniLM-L6-v2 against fp32 when the model is in the
// hub cache (`make models`): cosine >= 0.98 on every text.
func TestQuantizedMiniLMONNX(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	id, _ := hub.ParseID("sentence-transformers/all-MiniLM-L6-v2")
	c := hub.NewClient()
	c.Offline = true
	dir, err := c.Local(id)
	if err != nil {
		t.Skipf("all-MiniLM-L6-v2 not in the hub cache (make models): %v", err)
	}
	be, err := backend.Open("onnx")
	if err != nil {
		t.Skipf("no ONNX Runtime: %v", err)
	}
	m, err := export.LoadHF(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	tools, queries := parityTexts(t)
	texts := append(tools[:100], queries[:100]...)
	fp32, err := m.Embed(biencoder.ToolTower, texts)
	if err != nil {
		t.Fatal(err)
	}
	checkQuantized(t, m, export.QuantInt8, texts, fp32, 0.98)
}

// BenchmarkEmbedInt8 embeds 256 ToolLens queries (short) and 256 tool texts (long) with
// all-MiniLM-L6-v2 in fp32 and in int8 on the onnx backend ($TOOLRET_BENCH_BACKEND, default
// onnx), each after a warm-up pass over the same texts (every padded shape compiled), and
// reports texts/s (scripts/bench-int8.sh runs it).
func BenchmarkEmbedInt8(b *testing.B) {
	id, _ := hub.ParseID("sentence-transformers/all-MiniLM-L6-v2")
	c := hub.NewClient()
	c.Offline = true
	dir, err := c.Local(id)
	if err != nil {
		b.Skipf("all-MiniLM-L6-v2 not in the hub cache (make models): %v", err)
	}
	name := os.Getenv("TOOLRET_BENCH_BACKEND")
	if name == "" {
		name = "onnx"
	}
	be, err := backend.Open(name)
	if err != nil {
		b.Skipf("no ONNX Runtime: %v", err)
	}
	m, err := export.LoadHF(dir, be)
	if err != nil {
		b.Fatal(err)
	}
	tools, queries := parityTexts(b)
	for _, q := range []export.Quantization{export.QuantNone, export.QuantInt8} {
		for _, side := range []struct {
			name, tower string
			texts       []string
		}{{"short", biencoder.QueryTower, queries[:256]}, {"long", biencoder.ToolTower, tools[:256]}} {
			b.Run(fmt.Sprintf("%s/%s", q, side.name), func(b *testing.B) {
				if err := m.Quantize(q); err != nil {
					b.Fatal(err)
				}
				if _, err := m.Embed(side.tower, side.texts); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				start := time.Now()
				for b.Loop() {
					if _, err := m.Embed(side.tower, side.texts); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*len(side.texts))/time.Since(start).Seconds(), "texts/s")
			})
		}
	}
}

// TestQuantizedModernBERTONNX embeds the tiny ModernBERT fixture (scripts/parity/
// make_modernbert_fixture.py) in fp32 and int8 on ONNX Runtime: the int8 graph (its own ONNX
// graph, quantized, both granularities) stays within int8MinCos of fp32 on every text.
func TestQuantizedModernBERTONNX(t *testing.T) {
	be, err := backend.Open("onnx")
	if err != nil {
		t.Skipf("no ONNX Runtime (scripts/install-onnxruntime.sh): %v", err)
	}
	m, err := export.LoadHF(filepath.Join("..", "models", "modernbert", "testdata", "tiny"), be)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"Find the weather in Paris", "def add(a, b):\n    return a + b\n", "查询明天北京的天气",
		"Send an email to Bob with the quarterly report attached and then create a calendar event for the team meeting"}
	fp32, err := m.Embed(biencoder.ToolTower, texts)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []export.Quantization{export.QuantInt8, export.QuantInt8Tensor} {
		checkQuantized(t, m, q, texts, fp32, int8MinCos)
	}
}
