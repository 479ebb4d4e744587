package graph

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/toolret/toolret/backend"
)

// randGraph is a random bipartite graph with about e edges (isolated nodes allowed).
func randGraph(t *testing.T, rng *rand.Rand, n, m, e int, norm Norm) *Bipartite {
	t.Helper()
	pairs := make([][2]int, e)
	for i := range pairs {
		pairs[i] = [2]int{rng.IntN(n), rng.IntN(m)}
	}
	b, err := New(n, m, pairs, norm)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// randTable is an [n, d] table with entries uniform in [-1, 1).
func randTable(rng *rand.Rand, n, d int) []float64 {
	x := make([]float64, n*d)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	return x
}

// tableTensor converts a row-major float64 table to a tensor of dtype.
func tableTensor(x []float64, n, d int, dtype dtypes.DType) *tensors.Tensor {
	if dtype == dtypes.Float32 {
		f := make([]float32, len(x))
		for i, v := range x {
			f[i] = float32(v)
		}
		return tensors.FromFlatDataAndDimensions(f, n, d)
	}
	return tensors.FromFlatDataAndDimensions(append([]float64(nil), x...), n, d)
}

// asFloat64 reads a float32 or float64 tensor.
func asFloat64(t *tensors.Tensor) []float64 {
	if t.DType() == dtypes.Float64 {
		return tensors.MustCopyFlatData[float64](t)
	}
	f := tensors.MustCopyFlatData[float32](t)
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

// denseLightGCN propagates on the host with the dense (NL+NR)² normalised adjacency in
// float64: E^{k+1} = Â E^k.
func denseLightGCN(b *Bipartite, left, right []float64, d, layers int, combine Combine) (outL, outR []float64) {
	n := b.NLeft + b.NRight
	adj := make([][]float64, n)
	for i := range adj {
		adj[i] = make([]float64, n)
	}
	for e := range b.Left {
		l, r := int(b.Left[e]), b.NLeft+int(b.Right[e])
		adj[l][r] += float64(b.Weight[e])
		adj[r][l] += float64(b.Weight[e])
	}
	cur := append(append([]float64(nil), left...), right...)
	sum := append([]float64(nil), cur...)
	for range layers {
		next := make([]float64, n*d)
		for i := range n {
			for j := range n {
				if a := adj[i][j]; a != 0 {
					for k := range d {
						next[i*d+k] += a * cur[j*d+k]
					}
				}
			}
		}
		cur = next
		for i := range sum {
			v := cur[i]
			if combine == CombineNormSum {
				row := i / d * d
				nrm := 0.0
				for k := range d {
					nrm += cur[row+k] * cur[row+k]
				}
				if nrm = math.Sqrt(nrm); nrm > 1e-12 {
					v /= nrm
				} else {
					v = 0
				}
			}
			sum[i] += v
		}
	}
	out := sum
	switch combine {
	case CombineMean:
		for i := range out {
			out[i] /= float64(layers + 1)
		}
	case CombineLast:
		out = cur
	}
	return out[:b.NLeft*d], out[b.NLeft*d:]
}

// propagateExec runs Propagate with the edge list fed as inputs (as a trainer would with
// per-epoch dropout).
func propagateExec(t *testing.T, b *Bipartite, left, right *tensors.Tensor, layers int, combine Combine) (outL, outR []float64) {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	l, r, w := b.Tensors()
	out, err := ExecOnceN(be, func(xs []*Node) []*Node {
		e := Edges{NLeft: b.NLeft, NRight: b.NRight, Left: xs[2], Right: xs[3], Weight: xs[4]}
		ol, or := Propagate(xs[0], xs[1], e, layers, combine)
		return []*Node{ol, or}
	}, left, right, l, r, w)
	if err != nil {
		t.Fatal(err)
	}
	return asFloat64(out[0]), asFloat64(out[1])
}

func maxDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		m = max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

func TestPropagateMatchesDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const nl, nr, d = 9, 6, 4
	b := randGraph(t, rng, nl, nr, 20, NormSymmetric)
	padded, err := b.Pad(b.NumEdges() + 5)
	if err != nil {
		t.Fatal(err)
	}
	left, right := randTable(rng, nl, d), randTable(rng, nr, d)
	worst := map[dtypes.DType]float64{}
	defer func() {
		t.Logf("max |graph - dense|: float64 %.3g, float32 %.3g", worst[dtypes.Float64], worst[dtypes.Float32])
	}()
	for _, dtype := range []dtypes.DType{dtypes.Float64, dtypes.Float32} {
		for _, combine := range []Combine{CombineMean, CombineSum, CombineLast, CombineNormSum} {
			for _, layers := range []int{0, 1, 3} {
				for _, g := range []*Bipartite{b, padded} {
					wantL, wantR := denseLightGCN(b, left, right, d, layers, combine)
					gotL, gotR := propagateExec(t, g, tableTensor(left, nl, d, dtype), tableTensor(right, nr, d, dtype), layers, combine)
					diff := max(maxDiff(gotL, wantL), maxDiff(gotR, wantR))
					worst[dtype] = max(worst[dtype], diff)
					if diff > 1e-5 {
						t.Errorf("%s %s layers=%d edges=%d: max |graph - dense| = %g", dtype, combine, layers, g.NumEdges(), diff)
					}
				}
			}
		}
	}
}

func TestAggregateLeftMean(t *testing.T) {
	// Scenes 0 = {tools 0, 2}, 1 = {tool 1}, 2 = {} ; tool embeddings (1,2) (3,4) (5,6):
	// scene means (3, 4), (3, 4), (0, 0); tools from scenes (AggregateRight) with weights 1/2,
	// 1, 1/2: tool 0 ← ½·s0, tool 1 ← s1, tool 2 ← ½·s0.
	st, err := New(3, 3, [][2]int{{0, 0}, {0, 2}, {1, 1}}, NormLeftMean)
	if err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	out, err := ExecOnceN(be, func(g *Graph) []*Node {
		e := st.Const(g)
		tools := Const(g, [][]float32{{1, 2}, {3, 4}, {5, 6}})
		scenes := Const(g, [][]float32{{2, 4}, {6, 8}, {1, 1}})
		return []*Node{AggregateLeft(tools, e), AggregateRight(scenes, e)}
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]float64{{3, 4, 3, 4, 0, 0}, {1, 2, 6, 8, 1, 2}} {
		if got := asFloat64(out[i]); maxDiff(got, want) > 1e-6 {
			t.Errorf("output %d = %v, want %v", i, got, want)
		}
	}
}

func TestPropagateGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const nl, nr, d, layers = 5, 4, 2, 2
	b := randGraph(t, rng, nl, nr, 9, NormSymmetric)
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	// Loss = Σ c ⊙ (outLeft, outRight) with fixed random c, a linear functional whose gradient
	// is Âᵀ-propagated c.
	cl, cr := randTable(rng, nl, d), randTable(rng, nr, d)
	loss := func(xs []*Node) *Node {
		g := xs[0].Graph()
		ol, or := Propagate(xs[0], xs[1], b.Const(g), layers, CombineMean)
		return Add(ReduceAllSum(Mul(ol, ConstAs(ol, tableTensor(cl, nl, d, dtypes.Float64).Value()))),
			ReduceAllSum(Mul(or, ConstAs(or, tableTensor(cr, nr, d, dtypes.Float64).Value()))))
	}
	grads, err := NewExec(be, func(xs []*Node) []*Node { return Gradient(loss(xs), xs...) })
	if err != nil {
		t.Fatal(err)
	}
	value, err := NewExec(be, loss)
	if err != nil {
		t.Fatal(err)
	}
	x := [][]float64{randTable(rng, nl, d), randTable(rng, nr, d)}
	n := []int{nl, nr}
	call := func(e *Exec) []*tensors.Tensor {
		out, err := e.Call(tableTensor(x[0], nl, d, dtypes.Float64), tableTensor(x[1], nr, d, dtypes.Float64))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	g := call(grads)
	const h = 1e-6
	worst := 0.0
	for k := range x {
		ga := asFloat64(g[k])
		for i := range n[k] * d {
			orig := x[k][i]
			x[k][i] = orig + h
			plus := call(value)[0].Value().(float64)
			x[k][i] = orig - h
			minus := call(value)[0].Value().(float64)
			x[k][i] = orig
			num := (plus - minus) / (2 * h)
			if diff := math.Abs(num - ga[i]); diff > 1e-6+1e-5*math.Abs(num) {
				t.Errorf("table %d element %d: autodiff %g, finite differences %g", k, i, ga[i], num)
			}
			worst = max(worst, math.Abs(num-ga[i]))
		}
	}
	t.Logf("gradient check: max |autodiff - finite diff| = %.3g", worst)
}

func TestPropagateBadInput(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(3, 2, [][2]int{{0, 0}, {2, 1}}, NormSymmetric)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		nl, nr int
		layers int
		want   string
	}{
		{"left rows", 4, 2, 1, "left embeddings must be float [3, D]"},
		{"right rows", 3, 3, 1, "right embeddings must be float [2, D]"},
		{"layers", 3, 2, -1, "layers must be >= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ExecOnceN(be, func(g *Graph) []*Node {
				l := Zeros(g, shapesF32(tc.nl, 2))
				r := Zeros(g, shapesF32(tc.nr, 2))
				ol, or := Propagate(l, r, b.Const(g), tc.layers, CombineMean)
				return []*Node{ol, or}
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
}

func shapesF32(dims ...int) shapes.Shape { return shapes.Make(dtypes.Float32, dims...) }
