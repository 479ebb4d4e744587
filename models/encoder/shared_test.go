package encoder_test

import (
	"runtime"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/models/encoder"
)

// TestRunnerSharesWeights: a Runner that compiles a graph for each of 8 input shapes keeps
// one copy of the weights on the go backend, whose inference graphs would otherwise each
// embed (and prepack) their own: the Go heap grows by less than one copy of the weights
// from the first shape to the eighth (it grew by ~7 copies when each graph baked them in).
// Both for a store initialised beforehand and for an empty one whose variables the first
// call initialises (bench encode's random encoder).
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
	tok := testTokenizer(t)
	heap := func() int64 {
		runtime.GC()
		runtime.GC() // and the pools' victim caches
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	for _, tc := range []struct {
		name string
		init bool
	}{
		{"initialised store", true},
		{"empty store, initialised on first use", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := model.NewStore()
			store.SetParam(model.ParamInitialSeed, int64(5))
			if tc.init {
				if err := cfg.Init(store.RootScope(), 5); err != nil {
					t.Fatal(err)
				}
			}
			r, err := encoder.NewRunner(be, store, "", cfg, encoder.PoolMean)
			if err != nil {
				t.Fatal(err)
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
			var weights int64
			for v := range store.IterVariables() {
				weights += int64(v.Shape().ByteSize())
			}
			if weights == 0 {
				t.Fatal("no weights in the store after a call")
			}
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
		})
	}
}

// TestVariablesAsParameters: an inference graph whose variables are registered as parameters
// reads each variable's current value at every call (a value set after the graph compiled is
// the one used), gets no parameter for variables it skips, and leaves the graph's training
// flag as it found it. The control, without the call, shows the backend baking the value in.
func TestVariablesAsParameters(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		params     bool
		wantParams int     // graph parameters: x, and w when registered
		wantSecond float32 // x·w after w is set to 3 (first call: w = 2)
	}{
		{"parameters", true, 2, 3},
		{"constants (control)", false, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := model.NewStore()
			w, err := store.RootScope().In("m").CreateVariable("w", tensors.FromValue(float32(2)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.RootScope().In("optimizer").CreateVariable("m", tensors.FromValue(float32(7))); err != nil {
				t.Fatal(err)
			}
			var nParams int
			var trainingAfter bool
			exec, err := model.NewExec(be, store, func(root *model.Scope, x *graph.Node) *graph.Node {
				g := x.Graph()
				if tc.params {
					encoder.VariablesAsParameters(root, g, checkpoints.OptimizerScope)
				}
				trainingAfter = root.IsTraining(g)
				out := graph.Mul(x, root.In("m").GetVariable("w").NodeValue(g))
				nParams = g.NumParameters()
				return out
			})
			if err != nil {
				t.Fatal(err)
			}
			call := func() float32 {
				out, err := exec.Call1(float32(1))
				if err != nil {
					t.Fatal(err)
				}
				return out.Value().(float32)
			}
			if got := call(); got != 2 {
				t.Fatalf("first call: %v, want 2", got)
			}
			if err := w.SetValue(tensors.FromValue(float32(3))); err != nil {
				t.Fatal(err)
			}
			if got := call(); got != tc.wantSecond {
				t.Errorf("after w = 3: %v, want %v", got, tc.wantSecond)
			}
			if nParams != tc.wantParams {
				t.Errorf("graph parameters: %d, want %d (the optimizer's variable must not be one)", nParams, tc.wantParams)
			}
			if trainingAfter {
				t.Error("the graph is left marked as training")
			}
		})
	}
}
