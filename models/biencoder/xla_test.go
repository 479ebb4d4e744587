//go:build xla

package biencoder

import (
	"math"
	"testing"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/train"
)

// TestTrainStepsXLA: three AdamW steps of a small bi-encoder (BERT and DeBERTa, hard
// negatives, in-batch InfoNCE) from the same initial weights give the same losses and gradient
// norms on XLA's CPU plugin as on the go backend, within 1e-4 relative. It skips when the
// plugin is not installed (`make install-xla`).
func TestTrainStepsXLA(t *testing.T) {
	xb, err := backend.Open("xla:cpu")
	if err != nil {
		t.Skipf("XLA CPU plugin not installed (make install-xla): %v", err)
	}
	for _, arch := range []string{"bert", "deberta-v2"} {
		t.Run(arch, func(t *testing.T) {
			task := padTask(t, arch, 8, 1)
			// Initial weights made once, on the go backend (random initializers may differ
			// between backends), then copied.
			store := model.NewStore()
			store.SetParam(model.ParamInitialSeed, int64(5))
			init, err := model.NewExec(task.Backend, store, func(s *model.Scope, in []*Node) *Node { return task.Loss(s, in) })
			if err != nil {
				t.Fatal(err)
			}
			in, _, err := task.Batch(0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := init.Call(argsOf(in)...); err != nil {
				t.Fatal(err)
			}
			clone := model.NewStore()
			for v := range store.IterVariables() {
				x, err := v.MustValue().LocalClone()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := clone.CreateVariable(v.Path(), x); err != nil {
					t.Fatal(err)
				}
			}
			goRun := trainSteps(t, task, task.Backend, store, 3)
			xlaRun := trainSteps(t, task, xb, clone, 3)
			for i := range goRun {
				d := math.Abs(goRun[i] - xlaRun[i])
				t.Logf("step %d %s: go %.6f xla %.6f", i/2, []string{"loss", "grad norm"}[i%2], goRun[i], xlaRun[i])
				if d > 1e-4*max(1, math.Abs(goRun[i])) || math.IsNaN(xlaRun[i]) {
					t.Errorf("step %d %s: xla %g, go %g", i/2, []string{"loss", "grad norm"}[i%2], xlaRun[i], goRun[i])
				}
			}
		})
	}
}

// trainSteps runs n training steps (batches 0..n-1 of epoch 0, cycling) on be and returns the
// loss and gradient norm of each.
func trainSteps(t *testing.T, task *Task, be compute.Backend, store *model.Store, n int) []float64 {
	t.Helper()
	opt := train.DefaultOptimizer()
	opt.LR, opt.Schedule, opt.TotalSteps = 1e-3, "constant", n
	exec, err := model.NewExec(be, store, func(s *model.Scope, in []*Node) []*Node {
		s.SetTraining(in[0].Graph(), true)
		l := task.Loss(s, in)
		_, norm := opt.Update(s, l)
		return []*Node{l, ConvertDType(norm, l.DType())}
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for i := range n {
		in, _, err := task.Batch(0, i%task.Batches(0))
		if err != nil {
			t.Fatal(err)
		}
		res, err := exec.Call(argsOf(in)...)
		if err != nil {
			t.Fatalf("%s step %d: %v", be.Name(), i, err)
		}
		out = append(out, float64(tensors.ToScalar[float32](res[0])), float64(tensors.ToScalar[float32](res[1])))
	}
	return out
}

func argsOf(in []*tensors.Tensor) []any {
	args := make([]any, len(in))
	for k, x := range in {
		args[k] = x
	}
	return args
}
