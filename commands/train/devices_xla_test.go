//go:build xla

package traincmd

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
)

// TestTrainDevicesXLA: `train biencoder -backend xla:cpu -devices 2` trains a tiny bi-encoder
// with the loss curve of -devices 1 at the same (global) -batch, and asking for more devices
// than the CPU plugin has is an error naming the count found. It skips without the plugin.
func TestTrainDevicesXLA(t *testing.T) {
	be, err := backend.Open("xla:cpu")
	if err != nil {
		t.Skipf("XLA CPU plugin not installed (make install-xla): %v", err)
	}
	dir := t.TempDir()
	common := []string{"-backend", "xla:cpu", "-layers", "1", "-hidden", "32", "-heads", "2", "-vocab-size", "1500", "-batch", "16",
		"-query-len", "16", "-tool-len", "32", "-pad-multiple", "0", "-max-steps", "3", "-test", "", "-quiet"}
	curve := func(n string) []float64 {
		run := filepath.Join(dir, "devices"+n)
		if err := biencoderCmd(append([]string{"-run", run, "-devices", n}, common...)); err != nil {
			t.Fatalf("-devices %s: %v", n, err)
		}
		b, err := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
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
	one, two := curve("1"), curve("2")
	if len(one) != 3 || len(two) != 3 {
		t.Fatalf("%d and %d steps, want 3", len(one), len(two))
	}
	for i := range one {
		t.Logf("step %d loss: -devices 1 %.6f, -devices 2 %.6f", i+1, one[i], two[i])
		if math.Abs(one[i]-two[i]) > 1e-4*max(1, math.Abs(one[i])) {
			t.Errorf("step %d: loss %g with -devices 2, %g with -devices 1", i+1, two[i], one[i])
		}
	}
	n := be.NumDevices() + 1
	err = biencoderCmd(append([]string{"-run", filepath.Join(dir, "too-many"), "-devices", strconv.Itoa(n)}, common...))
	want := "-devices " + strconv.Itoa(n) + ": backend xla has " + strconv.Itoa(n-1) + " device(s): ask XLA's CPU plugin for more host devices with -backend xla:cpu,devices=N"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("-devices %d: error %v, want %q", n, err, want)
	}
}
