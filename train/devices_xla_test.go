//go:build xla

package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/compute/dtypes"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
)

// TestDevicesXLA: the toy model trained with its batches split over 2 or 4 devices of XLA's
// CPU plugin follows the loss curve and ends with the weights of the same run on one device;
// so does it on 3 devices. A batch that does not divide by the count (3 devices: every batch
// of 16; the short last batch of 9 of each epoch) is given whole to every device.
func TestDevicesXLA(t *testing.T) {
	be, err := backend.Open("xla:cpu,devices=4")
	if err != nil {
		t.Skipf("XLA CPU plugin not installed (make install-xla): %v", err)
	}

	run := func(n int) ([]float64, map[string][]float32) {
		task := &toyTask{seed: 5, batches: 4, last: 9}
		store := newToyStore()
		cfg := toyConfig(filepath.Join(t.TempDir(), "run"))
		cfg.Epochs, cfg.Devices = 2, n
		if _, err := Run(be, store, task, cfg, false); err != nil {
			t.Fatalf("-devices %d: %v", n, err)
		}
		w := map[string][]float32{}
		for v := range store.IterVariables() {
			x := v.MustValue()
			if x.DType() != dtypes.Float32 {
				continue
			}
			w[v.Path()] = tensors.MustCopyFlatData[float32](x)
		}
		return losses(t, cfg.RunDir), w
	}
	l1, w1 := run(1)
	for _, n := range []int{2, 3, 4} {
		ln, wn := run(n)
		if len(ln) != len(l1) {
			t.Fatalf("%d steps on %d devices, %d on 1", len(ln), n, len(l1))
		}
		for i := range l1 {
			if math.Abs(l1[i]-ln[i]) > 1e-4*max(1, math.Abs(l1[i])) {
				t.Errorf("step %d: loss %g on %d devices, %g on 1", i+1, ln[i], n, l1[i])
			}
		}
		for k, a := range w1 {
			b := wn[k]
			for i := range a {
				if math.Abs(float64(a[i]-b[i])) > 1e-4 {
					t.Errorf("%s[%d]: %g on %d devices, %g on 1", k, i, b[i], n, a[i])
					break
				}
			}
		}
		t.Logf("%d devices: final loss %.6f (1 device %.6f)", n, ln[len(ln)-1], l1[len(l1)-1])
	}
}

func losses(t *testing.T, dir string) []float64 {
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct{ Loss float64 }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Loss)
	}
	return out
}

// TestResumeXLA: on XLA's CPU plugin (one device and two), a run stopped after 7 steps and
// resumed from its checkpoint (variables restored with their saved tensors as values, no
// initialisation graph) ends with the weights of the uninterrupted run.
func TestResumeXLA(t *testing.T) {
	be, err := backend.Open("xla:cpu,devices=2")
	if err != nil {
		t.Skipf("XLA CPU plugin not installed (make install-xla): %v", err)
	}
	for _, n := range []int{1, 2} {
		task := &toyTask{seed: 3, batches: 10}
		cfg := toyConfig(filepath.Join(t.TempDir(), "ref"))
		cfg.Devices = n
		ref := newToyStore()
		if _, err := Run(be, ref, task, cfg, false); err != nil {
			t.Fatal(err)
		}
		cfg.RunDir = filepath.Join(t.TempDir(), "run")
		cfg.StopAfter = 7
		if _, err := Run(be, newToyStore(), task, cfg, false); !errors.Is(err, ErrStopped) {
			t.Fatalf("-devices %d: %v", n, err)
		}
		cfg.StopAfter = 0
		resumed := model.NewStore()
		if _, err := Run(be, resumed, task, cfg, true); err != nil {
			t.Fatalf("-devices %d: resume: %v", n, err)
		}
		got, want := weightsBytes(t, resumed), weightsBytes(t, ref)
		for p, w := range want {
			if !bytes.Equal(got[p], w) {
				t.Errorf("-devices %d: variable %s differs after stop at 7 and resume", n, p)
			}
		}
	}
}
