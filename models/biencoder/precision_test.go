package biencoder

import (
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/internal/paritytest"
)

// precisionSteps runs n AdamW steps on batch 0 of task with the encoder's products in compute
// on the backend name, from weights seeded 5, and returns the losses and the store.
func precisionSteps(t *testing.T, name string, compute dtypes.DType, n int) ([]float64, *model.Store) {
	t.Helper()
	be := paritytest.Backend(t, name)
	task := padTask(t, "bert", PadFixed, 1)
	task.Cfg.Compute = compute
	store := seededStore(5)
	exec := stepExec(t, be, task, store, n)
	args := argsOf(firstBatch(t, task))
	var losses []float64
	for i := range n {
		res, err := exec.Call(args...)
		if err != nil {
			t.Fatalf("%s, compute %s, step %d: %v", name, compute, i, err)
		}
		if dt := res[0].DType(); dt != dtypes.Float32 {
			t.Fatalf("%s, compute %s: loss dtype %s, want float32", name, compute, dt)
		}
		losses = append(losses, float64(tensors.ToScalar[float32](res[0])))
	}
	return losses, store
}

// checkTrainBF16: mixed-precision training steps on one batch reduce the loss as fp32 steps
// do, start from a loss within bf16 rounding of the fp32 one but not equal to it (the products
// ran in bfloat16), and leave every float variable (weights, AdamW state) float32.
func checkTrainBF16(t *testing.T, name string) {
	const n = 6
	l32, _ := precisionSteps(t, name, dtypes.Float32, n)
	l16, store := precisionSteps(t, name, dtypes.BFloat16, n)
	t.Logf("%s: fp32 losses %.5f", name, l32)
	t.Logf("%s: bf16 losses %.5f", name, l16)
	if !(l16[n-1] < 0.9*l16[0]) {
		t.Errorf("%s: bf16 loss %.5f after %d steps, from %.5f: want a drop of over 10%%", name, l16[n-1], n, l16[0])
	}
	if d := l16[0] - l32[0]; d > 2e-2*l32[0] || -d > 2e-2*l32[0] {
		t.Errorf("%s: first bf16 loss %.6f, fp32 %.6f: differ by more than 2%%", name, l16[0], l32[0])
	}
	if l16[0] == l32[0] {
		t.Errorf("%s: first bf16 loss equals the fp32 one (%.8f): the products did not run in bfloat16", name, l16[0])
	}
	nv := 0
	for v := range store.IterVariables() {
		if dt := v.Shape().DType; dt.IsFloat() && dt != dtypes.Float32 {
			t.Errorf("%s: variable %s is %s after bf16 training, want float32", name, v.Path(), dt)
		}
		nv++
	}
	if nv == 0 {
		t.Fatalf("%s: no variables after training", name)
	}
}

// TestTrainBF16 runs checkTrainBF16 on the go backend.
func TestTrainBF16(t *testing.T) { checkTrainBF16(t, "go") }

func TestPrecisionSetting(t *testing.T) {
	for _, c := range []struct {
		precision, backend string
		want               string // the precision taken; "" for an error
		err                string // in the error
	}{
		{"fp32", "go", "fp32", ""},
		{"", "go", "fp32", ""},
		{"bf16", "go", "bf16", ""},
		{"auto", "go", "fp32", ""},
		{"auto", "onnx", "fp32", ""},
		{"bf16", "onnx", "", "-precision bf16: backend onnx:cpu"},
		{"bf16", "xla:cuda", "bf16", ""},
		{"auto", "xla:cuda", "bf16", ""},
		{"bogus", "go", "", `-precision "bogus": want fp32, bf16, auto`},
	} {
		s := DefaultTrainConfig().Training
		s.Precision = c.precision
		got, dt, why, err := s.ResolvePrecision(c.backend)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q on %s: error %v, want one with %q", c.precision, c.backend, err, c.err)
			}
		case err != nil:
			t.Errorf("%q on %s: %v", c.precision, c.backend, err)
		case got != c.want || (got == "bf16") != (dt == dtypes.BFloat16) || why == "":
			t.Errorf("%q on %s: %q, %s, %q; want %q", c.precision, c.backend, got, dt, why, c.want)
		}
	}
	c := DefaultTrainConfig()
	c.Training.Precision = "bogus"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `precision "bogus"`) {
		t.Errorf("Validate with precision bogus: %v, want an error naming precision", err)
	}
	if c.Training.Precision = "bf16"; c.Validate() != nil {
		t.Errorf("Validate with precision bf16: %v", c.Validate())
	}
}
