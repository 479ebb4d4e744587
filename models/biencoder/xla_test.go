//go:build xla

package biencoder

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
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
			store := seededStore(5)
			init, err := model.NewExec(task.Backend, store, func(s *model.Scope, in []*Node) *Node { return task.Loss(s, in) })
			if err != nil {
				t.Fatal(err)
			}
			if _, err := init.Call(argsOf(firstBatch(t, task))...); err != nil {
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
	exec := stepExec(t, be, task, store, n)
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

// TestDevicesXLA: a small BERT bi-encoder (in-batch InfoNCE with a hard negative per query)
// trained 4 steps by the trainer with each batch split over 2 devices of XLA's CPU plugin
// (train.Config.Devices) has the loss curve and the final weights of the same run on one
// device, within float rounding. It skips when the plugin is not installed.
func TestDevicesXLA(t *testing.T) {
	xb, err := backend.Open("xla:cpu")
	if err != nil {
		t.Skipf("XLA CPU plugin not installed (make install-xla): %v", err)
	}
	if xb.NumDevices() < 2 {
		t.Skipf("backend %s has %d device(s): 2 needed", xb.Description(), xb.NumDevices())
	}
	task := padTask(t, "bert", PadFixed, 1) // one input shape: one compilation per run
	task.Backend = xb
	run := func(n int) ([]float64, map[string][]float32) {
		store := model.NewStore()
		store.SetParam(model.ParamInitialSeed, int64(5))
		opt := train.DefaultOptimizer()
		opt.LR = 1e-3
		cfg := train.Config{RunDir: filepath.Join(t.TempDir(), "run"), Seed: 1, Epochs: 1, MaxSteps: 4, Optimizer: opt, Quiet: true, Devices: n}
		if _, err := train.Run(xb, store, task, cfg, false); err != nil {
			t.Fatalf("-devices %d: %v", n, err)
		}
		w := map[string][]float32{}
		for v := range store.IterVariables() {
			if x := v.MustValue(); x.DType() == dtypes.Float32 {
				w[v.Path()] = tensors.MustCopyFlatData[float32](x)
			}
		}
		return trainLosses(t, cfg.RunDir), w
	}
	l1, w1 := run(1)
	l2, w2 := run(2)
	if len(l1) != 4 || len(l2) != len(l1) {
		t.Fatalf("%d and %d steps, want 4", len(l1), len(l2))
	}
	for i := range l1 {
		t.Logf("step %d loss: 1 device %.6f, 2 devices %.6f", i+1, l1[i], l2[i])
		if d := math.Abs(l1[i] - l2[i]); d > 1e-4*max(1, math.Abs(l1[i])) {
			t.Errorf("step %d: loss %g on 2 devices, %g on 1", i+1, l2[i], l1[i])
		}
	}
	worst, at := 0.0, ""
	for k, a := range w1 {
		b := w2[k]
		if len(b) != len(a) {
			t.Fatalf("%s: %d values on 2 devices, %d on 1", k, len(b), len(a))
		}
		for i := range a {
			if d := math.Abs(float64(a[i] - b[i])); d > worst {
				worst, at = d, k
			}
		}
	}
	t.Logf("%d weight tensors, max |w(2 devices) - w(1)| %.2g (%s)", len(w1), worst, at)
	if worst > 1e-4 {
		t.Errorf("weights differ by %g (%s)", worst, at)
	}
}

// trainLosses reads the loss of each step from a run's metrics.jsonl.
func trainLosses(t *testing.T, dir string) []float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct{ Loss float64 }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Loss)
	}
	return out
}
