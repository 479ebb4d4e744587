package encoder_test

import (
	"runtime"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/encoder"
)

// TestRunnerSharesWeights: a Runner that compiles a graph for each of 8 input shapes keeps
// one copy of the weights on the go backend, whose inference graphs would otherwise each
// embed (and prepack) their own: the Go heap grows by less than one copy of the weights
// from the first shape to the eighth (it grew by ~7 copies when each graph baked them in).
func TestRunnerSharesWeights(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	// Weights mostly in matrix products (2 layers of hidden 256: 6.6 MB), little compute.
	cfg, err := encoder.New("bert", encoder.Sizes{Vocab: 1000, Layers: 2, Hidden: 256, Heads: 2, MaxPositions: 16})
	if err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	if err := cfg.Init(store.RootScope(), 5); err != nil {
		t.Fatal(err)
	}
	var weights int64
	for v := range store.IterVariables() {
		weights += int64(v.Shape().ByteSize())
	}
	r, err := encoder.NewRunner(be, store, "", cfg, encoder.PoolMean)
	if err != nil {
		t.Fatal(err)
	}
	tok := testTokenizer(t)
	heap := func() int64 {
		runtime.GC()
		runtime.GC() // and the pools' victim caches
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	run := func(rows, n int) {
		seqs := make([][]int32, rows)
		for i := range seqs {
			seqs[i] = []int32{tok.CLSID()}
			for j := 0; j < n; j++ {
				seqs[i] = append(seqs[i], int32(5+j%5))
			}
			seqs[i] = append(seqs[i], tok.SEPID())
		}
		if _, err := encoder.Map(tok, seqs, nil, 16, rows, r.Call); err != nil {
			t.Fatalf("%d rows of %d tokens: %v", rows, n+2, err)
		}
	}
	run(1, 2)
	run(1, 2)
	first := heap()
	for _, rows := range []int{1, 2, 4, 8} {
		for _, n := range []int{4, 12} { // padded to 8 and 16 tokens
			run(rows, n)
		}
	}
	grew := heap() - first
	runtime.KeepAlive(r) // its compiled graphs are what is measured
	if grew > weights {
		t.Errorf("8 shapes compiled: the heap grew by %.1f MB, more than one copy of the weights (%.1f MB)", float64(grew)/1e6, float64(weights)/1e6)
	} else {
		t.Logf("8 shapes compiled: the heap grew by %.1f MB; weights %.1f MB", float64(grew)/1e6, float64(weights)/1e6)
	}
}
