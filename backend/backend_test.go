package backend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
)

func TestConfig(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "go:ops_sequential"}, {"go", "go:ops_sequential"}, {"onnx", "onnx:cpu"},
		{"xla", "xla:cpu"}, {"xla:cuda", "xla:cuda"}, {"go:parallelism=2", "go:parallelism=2"},
	} {
		if got := Config(tc.in); got != tc.want {
			t.Errorf("Config(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestOpenGo(t *testing.T) {
	b, err := Open("go")
	if err != nil {
		t.Fatal(err)
	}
	out := graph.MustExecOnce(b, func(x *graph.Node) *graph.Node { return graph.Add(x, x) }, float32(2))
	if got := out.Value().(float32); got != 4 {
		t.Fatalf("2+2 = %v", got)
	}
	b2, _ := Open("go")
	if b != b2 {
		t.Error("Open should share one backend per config")
	}
}

func TestOpenUnknown(t *testing.T) {
	_, err := Open("tpu-from-mars")
	if err == nil || !strings.Contains(err.Error(), "unknown backend kind") {
		t.Fatalf("want unknown-backend error, got %v", err)
	}
}

func TestXLAConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TOOLRET_CACHE", dir)
	if old, set := os.LookupEnv("PJRT_PLUGIN_LIBRARY_PATH"); set {
		os.Unsetenv("PJRT_PLUGIN_LIBRARY_PATH")
		t.Cleanup(func() { os.Setenv("PJRT_PLUGIN_LIBRARY_PATH", old) })
	}
	lib, cuda := XLAPluginCachePath(), XLACUDAPluginCachePath()
	if want := filepath.Join(dir, "xla", "pjrt_c_api_cpu_plugin.so"); lib != want {
		t.Fatalf("XLAPluginCachePath() = %q, want %q", lib, want)
	}
	if want := filepath.Join(dir, "xla-cuda", "nvidia", "pjrt_c_api_cuda_plugin.so"); cuda != want {
		t.Fatalf("XLACUDAPluginCachePath() = %q, want %q", cuda, want)
	}
	cases := []struct{ in, missing, present string }{
		{"xla:cpu", "xla:cpu", "xla:" + lib},
		{"xla:cpu,noshared_buffers", "xla:cpu,noshared_buffers", "xla:" + lib + ",noshared_buffers"},
		{"xla:cuda", "xla:cuda", "xla:" + cuda},
		{"xla:cuda,preallocate=false", "xla:cuda,preallocate=false", "xla:" + cuda + ",preallocate=false"},
		{"xla:rocm", "xla:rocm", "xla:rocm"},
		{"xla:/opt/p.so", "xla:/opt/p.so", "xla:/opt/p.so"},
		{"go:ops_sequential", "go:ops_sequential", "go:ops_sequential"},
		{"onnx:cpu", "onnx:cpu", "onnx:cpu"},
	}
	for _, tc := range cases {
		if got := xlaConfig(tc.in); got != tc.missing {
			t.Errorf("no plugin: xlaConfig(%q) = %q, want %q", tc.in, got, tc.missing)
		}
	}
	for _, p := range []string{lib, cuda} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		if got := xlaConfig(tc.in); got != tc.present {
			t.Errorf("plugin cached: xlaConfig(%q) = %q, want %q", tc.in, got, tc.present)
		}
	}
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", dir)
	if got := xlaConfig("xla:cpu"); got != "xla:cpu" {
		t.Errorf("with PJRT_PLUGIN_LIBRARY_PATH set: xlaConfig(xla:cpu) = %q, want it unchanged", got)
	}
}

// TestCPUDevices: toolret's devices=N option is taken out of an xla:cpu config (whatever its
// place among the options) and refused for a GPU plugin or a bad count.
func TestCPUDevices(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		n       int
		err     string
	}{
		{"xla:cpu", "xla:cpu", 0, ""},
		{"xla:cpu,devices=2", "xla:cpu", 2, ""},
		{"xla:/c/pjrt_c_api_cpu_plugin.so,noshared_buffers,devices=8", "xla:/c/pjrt_c_api_cpu_plugin.so,noshared_buffers", 8, ""},
		{"xla:cpu,devices=3,noshared_buffers", "xla:cpu,noshared_buffers", 3, ""},
		{"xla:cuda,preallocate=false", "xla:cuda,preallocate=false", 0, ""},
		{"go:ops_sequential", "go:ops_sequential", 0, ""},
		{"xla:cpu,devices=0", "", 0, "devices=0: want a count >= 1"},
		{"xla:cpu,devices=two", "", 0, "devices=two"},
		{"xla:cuda,devices=2", "", 0, "only the CPU plugin"},
	} {
		out, n, err := cpuDevices(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("cpuDevices(%q): error %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || out != tc.out || n != tc.n {
			t.Errorf("cpuDevices(%q) = %q, %d, %v; want %q, %d", tc.in, out, n, err, tc.out, tc.n)
		}
	}
}

func TestTraining(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"onnx", "onnx:cpu,cpu_mem_arena=false"},
		{"onnxruntime", "onnx:cpu,cpu_mem_arena=false"},
		{"onnx:cpu", "onnx:cpu,cpu_mem_arena=false"},
		{"onnx:cpu,cpu_mem_arena=true", "onnx:cpu,cpu_mem_arena=true"},
		{"onnx:cpu,intra_op_num_threads=1", "onnx:cpu,intra_op_num_threads=1"},
		{"go", "go"},
		{"", ""},
		{"xla:cpu", "xla:cpu"},
	} {
		if got := Training(c.in); got != c.want {
			t.Errorf("Training(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestOpenBadOption(t *testing.T) {
	_, err := Open("go:no_such_option")
	if err == nil {
		t.Fatal("an unknown go backend option opened")
	}
	msg := err.Error()
	if !strings.Contains(msg, "no_such_option") || !strings.Contains(msg, "check the options") {
		t.Errorf("error should name the option and say to check the options: %v", err)
	}
}

// TestAuto checks that "auto" is the onnx backend exactly when ONNX Runtime is present.
func TestAuto(t *testing.T) {
	want := "go"
	if ONNXAvailable() {
		want = "onnx"
	}
	if got := Auto(); got != want {
		t.Fatalf("Auto() = %q, want %q", got, want)
	}
	if Config("auto") != Config(want) {
		t.Fatalf("Config(auto) = %q, want %q", Config("auto"), Config(want))
	}
	t.Setenv("ONNXRUNTIME_SHARED_LIBRARY_PATH", filepath.Join(t.TempDir(), "missing.so"))
	if Auto() != "go" {
		t.Fatalf("Auto() = %q with no ONNX Runtime library", Auto())
	}
}
