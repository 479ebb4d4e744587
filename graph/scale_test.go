package graph

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/toolret/toolret/backend"
)

// scaleEnv enables TestPropagateScale: TOOLRET_GRAPH_SCALE=1 go test ./graph -run Scale -v
const scaleEnv = "TOOLRET_GRAPH_SCALE"

// scaleStep builds LightGCN on a synthetic graph of nl+nr nodes and about e edges, D = d,
// 3 layers, and returns an Exec computing the loss Σ(outLeft²) + Σ(outRight²) and its
// gradients with respect to both embedding tables, plus its inputs.
func scaleStep(tb testing.TB, nl, nr, e, d int) (*Exec, []any) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	pairs := make([][2]int, e)
	for i := range pairs {
		pairs[i] = [2]int{rng.IntN(nl), rng.IntN(nr)}
	}
	b, err := New(nl, nr, pairs, NormSymmetric)
	if err != nil {
		tb.Fatal(err)
	}
	be, err := backend.Open("")
	if err != nil {
		tb.Fatal(err)
	}
	exec, err := NewExec(be, func(xs []*Node) []*Node {
		edges := Edges{NLeft: nl, NRight: nr, Left: xs[2], Right: xs[3], Weight: xs[4]}
		ol, or := Propagate(xs[0], xs[1], edges, 3, CombineMean)
		loss := Add(ReduceAllSum(Square(ol)), ReduceAllSum(Square(or)))
		return append([]*Node{loss}, Gradient(loss, xs[0], xs[1])...)
	})
	if err != nil {
		tb.Fatal(err)
	}
	l, r, w := b.Tensors()
	table := func(n int) *tensors.Tensor {
		x := make([]float32, n*d)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 0.1)
		}
		return tensors.FromFlatDataAndDimensions(x, n, d)
	}
	tb.Logf("synthetic graph: %d + %d = %d nodes, %d edges, D = %d, 3 layers", nl, nr, nl+nr, b.NumEdges(), d)
	return exec, []any{table(nl), table(nr), l, r, w}
}

// TestPropagateScale times one forward+backward LightGCN pass on 120k nodes and 1.2M edges.
// It needs a few GB of memory and tens of seconds, so it only runs with TOOLRET_GRAPH_SCALE=1.
func TestPropagateScale(t *testing.T) {
	if testing.Short() || os.Getenv(scaleEnv) == "" {
		t.Skipf("set %s=1 to run the 1M-edge scale check", scaleEnv)
	}
	exec, args := scaleStep(t, 80_000, 40_000, 1_200_000, 64)
	defer exec.Finalize()
	for run := range 2 {
		start := time.Now()
		out, err := exec.Call(args...)
		if err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		loss := out[0].Value().(float32)
		if out[1].DType() != dtypes.Float32 || out[1].Shape().Dim(0) != 80_000 || out[2].Shape().Dim(0) != 40_000 {
			t.Fatalf("gradient shapes %s, %s", out[1].Shape(), out[2].Shape())
		}
		what := "compile + forward + backward"
		if run > 0 {
			what = "forward + backward"
		}
		t.Logf("run %d: %s in %s (loss %g)", run, what, elapsed.Round(time.Millisecond), loss)
		for _, o := range out {
			o.FinalizeAll()
		}
	}
}

// BenchmarkPropagateScale measures forward+backward on the same synthetic graph:
// go test ./graph -run NONE -bench PropagateScale -benchtime 3x
func BenchmarkPropagateScale(b *testing.B) {
	exec, args := scaleStep(b, 80_000, 40_000, 1_200_000, 64)
	defer exec.Finalize()
	if _, err := exec.Call(args...); err != nil { // compile outside the timing.
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		out, err := exec.Call(args...)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range out {
			o.FinalizeAll()
		}
	}
}
