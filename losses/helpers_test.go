package losses

import (
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/toolret/toolret/backend"
)

// arr is a float64 test input: row-major data with its dimensions.
type arr struct {
	dims []int
	data []float64
}

func (a arr) tensor() *tensors.Tensor {
	return tensors.FromFlatDataAndDimensions(append([]float64(nil), a.data...), a.dims...)
}

// randArr returns an arr of the given dims with entries uniform in [-1, 1).
func randArr(rng *rand.Rand, dims ...int) arr {
	n := 1
	for _, d := range dims {
		n *= d
	}
	a := arr{dims: dims, data: make([]float64, n)}
	for i := range a.data {
		a.data[i] = 2*rng.Float64() - 1
	}
	return a
}

// rows returns a's rank-2 view as [][]float64.
func (a arr) rows() [][]float64 {
	c := a.dims[len(a.dims)-1]
	out := make([][]float64, len(a.data)/c)
	for i := range out {
		out[i] = a.data[i*c : (i+1)*c]
	}
	return out
}

// lossGraph builds a scalar loss from the float64 differentiable inputs.
type lossGraph func(xs []*Node) *Node

// evalLoss runs f once on the inputs and returns the scalar loss; a graph-building panic
// comes back as an error.
func evalLoss(f lossGraph, in ...arr) (float64, error) {
	b, err := backend.Open("go")
	if err != nil {
		return 0, err
	}
	e, err := NewExec(b, (func([]*Node) *Node)(f))
	if err != nil {
		return 0, err
	}
	defer e.Finalize()
	args := make([]any, len(in))
	for i, a := range in {
		args[i] = a.tensor()
	}
	out, err := e.Call(args...)
	if err != nil {
		return 0, err
	}
	return out[0].Value().(float64), nil
}

// mustLoss is evalLoss failing the test on error.
func mustLoss(t *testing.T, f lossGraph, in ...arr) float64 {
	t.Helper()
	v, err := evalLoss(f, in...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkGrad compares GoMLX's reverse-mode gradient of f with central finite differences, in
// float64, for every element of every input.
func checkGrad(t *testing.T, f lossGraph, in ...arr) {
	t.Helper()
	b, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	grads, err := NewExec(b, func(xs []*Node) []*Node {
		return Gradient(f(xs), xs...)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer grads.Finalize()
	loss, err := NewExec(b, (func([]*Node) *Node)(f))
	if err != nil {
		t.Fatal(err)
	}
	defer loss.Finalize()
	call := func(e *Exec, in []arr) []*tensors.Tensor {
		args := make([]any, len(in))
		for i, a := range in {
			args[i] = a.tensor()
		}
		out, err := e.Call(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	analytic := call(grads, in)
	const h = 1e-6
	worst := 0.0
	for x := range in {
		got := tensors.MustCopyFlatData[float64](analytic[x])
		for i := range in[x].data {
			orig := in[x].data[i]
			in[x].data[i] = orig + h
			plus := call(loss, in)[0].Value().(float64)
			in[x].data[i] = orig - h
			minus := call(loss, in)[0].Value().(float64)
			in[x].data[i] = orig
			num := (plus - minus) / (2 * h)
			diff := math.Abs(got[i] - num)
			if diff > 1e-6+1e-5*math.Abs(num) || math.IsNaN(got[i]) {
				t.Errorf("input %d element %d: autodiff gradient %.9g, finite differences %.9g", x, i, got[i], num)
			}
			worst = max(worst, diff)
		}
	}
	t.Logf("gradient check: max |autodiff - finite diff| = %.3g", worst)
}

// near fails unless got is within tol of want.
func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.12g, want %.12g (tol %g)", name, got, want, tol)
	}
}

// Reference helpers in float64, independent of the graph code.

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func cosine(a, b []float64) float64 {
	return dot(a, b) / math.Sqrt(dot(a, a)*dot(b, b))
}

// lse is log Σ exp(x) over the entries with keep[j] (nil keeps all).
func lse(x []float64, keep []bool) float64 {
	m := math.Inf(-1)
	for j, v := range x {
		if keep == nil || keep[j] {
			m = max(m, v)
		}
	}
	s := 0.0
	for j, v := range x {
		if keep == nil || keep[j] {
			s += math.Exp(v - m)
		}
	}
	return m + math.Log(s)
}
