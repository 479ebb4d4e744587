package train

import (
	"math"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
)

func TestLRSchedule(t *testing.T) {
	o := Optimizer{LR: 1, Warmup: 2, TotalSteps: 6, Schedule: "linear"}
	want := []float64{0.5, 1, 0.75, 0.5, 0.25, 0, 0}
	for i, w := range want {
		if got := o.LRAt(i + 1); math.Abs(got-w) > 1e-12 {
			t.Errorf("linear LRAt(%d) = %v, want %v", i+1, got, w)
		}
	}
	o.Schedule = "cosine"
	// t=4: frac = (4-2)/4 = 0.5 -> 0.5*(1+cos(pi/2)) = 0.5.
	if got := o.LRAt(4); math.Abs(got-0.5) > 1e-12 {
		t.Errorf("cosine LRAt(4) = %v", got)
	}
}

// hostAdamW is a float64 reference of PyTorch's AdamW for one parameter vector.
type hostAdamW struct {
	p, m, v []float64
	t       int
}

func (h *hostAdamW) step(g []float64, lr, b1, b2, eps, wd float64, decay bool) {
	h.t++
	for i := range h.p {
		if decay {
			h.p[i] -= lr * wd * h.p[i]
		}
		h.m[i] = b1*h.m[i] + (1-b1)*g[i]
		h.v[i] = b2*h.v[i] + (1-b2)*g[i]*g[i]
		mh := h.m[i] / (1 - math.Pow(b1, float64(h.t)))
		vh := h.v[i] / (1 - math.Pow(b2, float64(h.t)))
		h.p[i] -= lr * mh / (math.Sqrt(vh) + eps)
	}
}

// lossFn: loss = sum(w * x) + sum(b * x^2) over x [2]; gradients: dw = x (as [1,2]), db = x^2.
func build(t *testing.T, o Optimizer) (*model.Store, *model.Exec) {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	if _, err := store.RootScope().In("lin").CreateVariable("weights", tensors.FromFlatDataAndDimensions([]float32{0.5, -1}, 1, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RootScope().In("lin").CreateVariable("bias", tensors.FromFlatDataAndDimensions([]float32{0.2, 0.3}, 2)); err != nil {
		t.Fatal(err)
	}
	exec, err := model.NewExec(be, store, func(s *model.Scope, x *Node) (*Node, *Node) {
		s.SetTraining(x.Graph(), true) // else backends may embed variables as constants
		w := store.GetVariable("/lin/weights").NodeValue(x.Graph())
		b := store.GetVariable("/lin/bias").NodeValue(x.Graph())
		loss := Add(ReduceAllSum(Mul(Reshape(w, 2), x)), ReduceAllSum(Mul(b, Square(x))))
		lr, _ := o.Update(s, loss)
		return loss, lr
	})
	if err != nil {
		t.Fatal(err)
	}
	return store, exec
}

func values(store *model.Store, path string) []float64 {
	var out []float64
	for _, v := range tensors.MustCopyFlatData[float32](store.GetVariable(path).MustValue()) {
		out = append(out, float64(v))
	}
	return out
}

// TestAdamWMatchesReference: three steps of the graph's AdamW against a float64 reference of
// PyTorch's, with one learning rate and with rules (Optimizer.Rules) giving /lin/weights 5x
// the rate (and of its weight decay) and /lin/bias 70x: the first matching rule counts.
func TestAdamWMatchesReference(t *testing.T) {
	for _, c := range []struct {
		name           string
		rules          []LRRule
		wScale, bScale float64
		tol            float64
	}{
		{"one rate", nil, 1, 1, 1e-5},
		{"rules", []LRRule{{Prefix: "/other", LR: 9}, {Prefix: "/lin/w", LR: 0.5}, {Prefix: "/lin", LR: 7}}, 5, 70, 1e-4},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := Optimizer{LR: 0.1, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.5, Warmup: 1, TotalSteps: 4, Schedule: "linear", Accumulate: 1, Rules: c.rules}
			store, exec := build(t, o)
			w := &hostAdamW{p: []float64{0.5, -1}, m: make([]float64, 2), v: make([]float64, 2)}
			b := &hostAdamW{p: []float64{0.2, 0.3}, m: make([]float64, 2), v: make([]float64, 2)}
			for i, x := range [][]float64{{1, 2}, {-3, 0.5}, {0.25, -1}} {
				if _, err := exec.Call(tensors.FromFlatDataAndDimensions([]float32{float32(x[0]), float32(x[1])}, 2)); err != nil {
					t.Fatal(err)
				}
				lr := o.LRAt(i + 1)
				w.step(x, lr*c.wScale, 0.9, 0.99, 1e-8, 0.5, true)
				b.step([]float64{x[0] * x[0], x[1] * x[1]}, lr*c.bScale, 0.9, 0.99, 1e-8, 0.5, false) // bias: no decay
			}
			for _, v := range []struct {
				path string
				want []float64
			}{{"/lin/weights", w.p}, {"/lin/bias", b.p}} {
				got := values(store, v.path)
				for i := range got {
					if math.Abs(got[i]-v.want[i]) > c.tol {
						t.Errorf("%s[%d] = %v, reference %v", v.path, i, got[i], v.want[i])
					}
				}
			}
		})
	}
}

func TestAccumulationEqualsBigBatch(t *testing.T) {
	o := Optimizer{LR: 0.05, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, Schedule: "constant", Accumulate: 2}
	storeA, execA := build(t, o)
	for _, x := range [][]float32{{1, 2}, {3, -1}} {
		if _, err := execA.Call(tensors.FromFlatDataAndDimensions(x, 2)); err != nil {
			t.Fatal(err)
		}
	}
	// One step on the mean gradient: the loss is linear in x for w, so feed the mean of x for
	// w's gradient; for b the gradient is x^2, whose mean is not (mean x)^2, so compare w only.
	o.Accumulate = 1
	storeB, execB := build(t, o)
	if _, err := execB.Call(tensors.FromFlatDataAndDimensions([]float32{2, 0.5}, 2)); err != nil {
		t.Fatal(err)
	}
	a, b := values(storeA, "/lin/weights"), values(storeB, "/lin/weights")
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-6 {
			t.Fatalf("accumulated %v vs big batch %v", a, b)
		}
	}
	// After one micro-batch only, nothing may have changed.
	storeC, execC := build(t, Optimizer{LR: 0.05, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Schedule: "constant", Accumulate: 2})
	execC.Call(tensors.FromFlatDataAndDimensions([]float32{1, 2}, 2))
	if got := values(storeC, "/lin/weights"); got[0] != 0.5 || got[1] != -1 {
		t.Fatalf("weights changed on an accumulation-only micro-step: %v", got)
	}
}

func TestNoDecay(t *testing.T) {
	for _, c := range []struct {
		path string
		dims []int
		want bool
	}{
		{"/encoder/layer/0/output/dense/bias", []int{4}, true},
		{"/embeddings/LayerNorm/weight", []int{4}, true},
		{"/encoder/layer/0/output/dense/weight", []int{4, 4}, false},
		{"/embeddings/word_embeddings/weight", []int{10, 4}, false},
	} {
		if got := NoDecay(c.path, shapes.Make(dtypes.Float32, c.dims...)); got != c.want {
			t.Errorf("NoDecay(%s) = %v", c.path, got)
		}
	}
}

func TestValidate(t *testing.T) {
	o := DefaultOptimizer()
	o.TotalSteps = 10
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(*Optimizer)
	}{
		{"accumulate 0", func(o *Optimizer) { o.Accumulate = 0 }},
		{"rule without prefix", func(o *Optimizer) { o.Rules = []LRRule{{LR: 1e-3}} }},
		{"rule lr 0", func(o *Optimizer) { o.Rules = []LRRule{{Prefix: "/classifier/", LR: 0}} }},
		{"rule lr NaN", func(o *Optimizer) { o.Rules = []LRRule{{Prefix: "/classifier/", LR: math.NaN()}} }},
	} {
		bad := o
		c.edit(&bad)
		if bad.Validate() == nil {
			t.Errorf("%s accepted", c.name)
		}
	}
}
