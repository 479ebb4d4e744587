package bert

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
)

// BenchmarkEncode times one forward pass (mean pooling) of a 6-layer, 384-hidden, 6-head BERT
// over a batch of 32 texts of 24 tokens (ToolLens query lengths), randomly initialised:
//
//	go test ./models/bert/ -run '^$' -bench Encode -benchtime 20x
//	go test -tags onnx ./models/bert/ -run '^$' -bench Encode -benchtime 20x  # BERT_BENCH_BACKEND=onnx
//
// texts/s = 32 / (ns/op * 1e-9). The end-to-end comparison with PyTorch on real ToolLens
// batches is `make bench-encode` (cmd/bench).
func BenchmarkEncode(b *testing.B) {
	name := os.Getenv("BERT_BENCH_BACKEND")
	if name == "" {
		name = "go"
	}
	be, err := backend.Open(name)
	if err != nil {
		b.Skipf("backend %s: %v", name, err)
	}
	cfg := Default()
	cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.IntermediateSize = 6, 384, 6, 1536
	const batch, seq = 32, 24
	rng := rand.New(rand.NewPCG(1, 2))
	ids, types, mask := make([][]int32, batch), make([][]int32, batch), make([][]int32, batch)
	for i := range ids {
		n := 16 + rng.IntN(seq-16+1) // 16..24 real tokens, the rest padding
		ids[i], types[i], mask[i] = make([]int32, seq), make([]int32, seq), make([]int32, seq)
		for j := 0; j < n; j++ {
			ids[i][j], mask[i][j] = int32(1000+rng.IntN(cfg.VocabSize-1000)), 1
		}
	}
	r, err := NewRunner(be, model.NewStore(), "", cfg, PoolMean)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Run(ids, types, mask); err != nil { // initialise and compile
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Run(ids, types, mask); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "texts/s")
}
