//go:build xla

package train

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/compute/dtypes"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/toolret/toolret/backend"
)

// TestDevicesXLA: the toy model trained with its batch split over 2 devices of XLA's CPU
// plugin follows the loss curve and ends with the weights of the same run on one device.
func TestDevicesXLA(t *testing.T) {
	be, err := backend.Open("xla:cpu")
	if err != nil {
		t.Skipf("XLA CPU plugin not installed (make install-xla): %v", err)
	}
	if be.NumDevices() < 2 {
		t.Skipf("backend %s has %d device(s)", be.Name(), be.NumDevices())
	}
	run := func(n int) ([]float64, map[string][]float32) {
		task := &toyTask{seed: 5, batches: 4}
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
	l2, w2 := run(2)
	for i := range l1 {
		t.Logf("step %d loss 1 device %.6f, 2 devices %.6f", i+1, l1[i], l2[i])
		if math.Abs(l1[i]-l2[i]) > 1e-4*max(1, math.Abs(l1[i])) {
			t.Errorf("step %d: loss %g on 2 devices, %g on 1", i+1, l2[i], l1[i])
		}
	}
	for k, a := range w1 {
		b := w2[k]
		for i := range a {
			if math.Abs(float64(a[i]-b[i])) > 1e-4 {
				t.Errorf("%s[%d]: %g on 2 devices, %g on 1", k, i, b[i], a[i])
				break
			}
		}
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
