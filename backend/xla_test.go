//go:build xla

package backend

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
)

// TestOpenXLA opens "xla" (xla:cpu) and runs a small graph on it. It skips when the CPU plugin
// is not installed (`make install-xla`).
func TestOpenXLA(t *testing.T) {
	b, err := Open("xla")
	if err != nil {
		t.Skipf("XLA CPU plugin not installed (make install-xla): %v", err)
	}
	if _, set := os.LookupEnv("PJRT_PLUGIN_LIBRARY_PATH"); !set {
		if _, err := os.Stat(XLAPluginCachePath()); err == nil && !strings.Contains(b.Description(), XLAPluginCachePath()) {
			t.Errorf("backend %q does not use the cached plugin %s", b.Description(), XLAPluginCachePath())
		}
	}
	t.Log(b.Description())
	out := graph.MustExecOnce(b, func(x *graph.Node) *graph.Node {
		m := graph.Reshape(x, 2, 2)
		return graph.ReduceAllSum(graph.MatMul(m, m))
	}, []float32{1, 2, 3, 4})
	// [[1 2] [3 4]]^2 = [[7 10] [15 22]], sum 54.
	if got := out.Value().(float32); got != 54 {
		t.Fatalf("sum of m·m = %v, want 54", got)
	}
}

// TestCPUDevicesXLA: xla:cpu,devices=N opens the CPU plugin with N host devices.
func TestCPUDevicesXLA(t *testing.T) {
	if _, err := Open("xla"); err != nil {
		t.Skipf("XLA CPU plugin not installed (make install-xla): %v", err)
	}
	for _, n := range []int{1, 2, 6} {
		b, err := Open(fmt.Sprintf("xla:cpu,devices=%d", n))
		if err != nil {
			t.Fatal(err)
		}
		if b.NumDevices() != n {
			t.Errorf("xla:cpu,devices=%d: %d devices (%s)", n, b.NumDevices(), b.Description())
		}
	}
}
