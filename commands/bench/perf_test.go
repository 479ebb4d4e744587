package benchcmd

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestProfilePath(t *testing.T) {
	for _, c := range []struct {
		file, name string
		several    bool
		want       string
	}{{"cpu.prof", "go", false, "cpu.prof"}, {"out/cpu.prof", "onnx:cpu,intra_threads=1", true, "out/cpu-onnx_cpu_intra_threads_1.prof"}, {"", "go", true, ""}} {
		if got := profilePath(c.file, c.name, c.several); got != c.want {
			t.Errorf("profilePath(%q, %q, %v) = %q, want %q", c.file, c.name, c.several, got, c.want)
		}
	}
}

// TestTrainBench runs a tiny bench train on the go backend with ToolLens-like lengths and
// -profile, and checks that an unavailable backend is a skip and an error, not a panic.
func TestTrainBench(t *testing.T) {
	if testing.Short() {
		t.Skip("times training steps and a matmul")
	}
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	args := []string{"-backends", "go", "-vs", "none", "-layers", "1", "-hidden", "16", "-heads", "2", "-batch", "4",
		"-steps", "3", "-lengths", "toollens", "-data", "missing-dir", "-pad-multiple", "8", "-profile", prof}
	if err := trainBench(args); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(prof); err != nil || st.Size() == 0 {
		t.Errorf("profile %s: %v", prof, err)
	}
	err := trainBench([]string{"-backend", "xla:cuda", "-vs", "none", "-layers", "1", "-hidden", "16", "-heads", "2", "-steps", "1"})
	if err == nil || !strings.Contains(err.Error(), "no toolret backend could be opened (xla:cuda)") {
		t.Errorf("-backend xla:cuda here: %v", err)
	}
	for _, c := range []struct{ args []string }{{[]string{"-shape", "huge"}}, {[]string{"-lengths", "some"}}, {[]string{"-pad-multiple", "-1"}},
		{[]string{"-vs", "tf"}}, {[]string{"-threads", "0"}}} {
		if err := trainBench(append([]string{"-vs", "none", "-backends", "go", "-steps", "1"}, c.args...)); err == nil || !strings.Contains(err.Error(), c.args[0]) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.args[0])
		}
	}
}

func TestSplitBackends(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"go,onnx", []string{"go", "onnx"}},
		{"go,onnx:cpu,intra_threads=1", []string{"go", "onnx:cpu,intra_threads=1"}},
		{"onnx:cpu,graph_optimization_level=1,parallel,go:ops_parallel", []string{"onnx:cpu,graph_optimization_level=1,parallel", "go:ops_parallel"}},
		{" go , ,xla:cuda", []string{"go", "xla:cuda"}},
		{"", nil},
	} {
		if got := splitBackends(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitBackends(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTorchCores(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{"auto", "auto", ""},
		{"auto,SkylakeX,auto", "auto SkylakeX", ""},
		{" SkylakeX ", "SkylakeX", ""},
		{"", "", "no core type"},
		{"Sky lake", "", "letters and digits"},
		{"auto;rm", "", "letters and digits"},
	} {
		got, err := torchCores(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("torchCores(%q) error %v, want one containing %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("torchCores(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	env := strings.Join(torchEnv("SkylakeX"), "\n")
	if !strings.Contains(env, "OPENBLAS_CORETYPE=SkylakeX") {
		t.Errorf("torchEnv(SkylakeX) lacks OPENBLAS_CORETYPE=SkylakeX")
	}
	t.Setenv("OPENBLAS_CORETYPE", "Haswell")
	for _, e := range torchEnv("auto") {
		if strings.HasPrefix(e, "OPENBLAS_CORETYPE=") {
			t.Errorf("torchEnv(auto) keeps %s", e)
		}
	}
}

// TestMatmulBench: the go backend's float32 and bfloat16 rows on a small size, and
// bad flags refused by name.
func TestMatmulBench(t *testing.T) {
	if err := matmulBench([]string{"-backends", "go", "-python", "", "-n", "32"}); err != nil {
		t.Fatalf("matmul bench: %v", err)
	}
	for _, c := range [][]string{{"-dtypes", "int8"}, {"-dtypes", ","}, {"-n", "0"}, {"-torch-blas", ""}} {
		if err := matmulBench(append(c, "-backends", "go", "-python", "")); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(c[0], "-")) {
			t.Errorf("%q: error %v, want one naming %s", c, err, c[0])
		}
	}
}

// TestTrainBenchVsST runs bench train -vs st with a stand-in for the sentence-transformers
// python (a script printing st_train.py's output line) and checks the rows and ratios, and
// that a missing venv is a skip and an error.
func TestTrainBenchVsST(t *testing.T) {
	if testing.Short() {
		t.Skip("times training steps and a matmul")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "python")
	line := `{"seconds": 2.0, "cpu_seconds": 4.0, "peak_rss": 104857600, "threads": 2, "torch": "2.15.0", "st": "6.2.0", "attn": "sdpa", "blas": "mkl", "fused_adamw": true, "encode_texts_per_sec": 50.0, "bf16_note": "absent: test", "mm_gflops": 100.0}`
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho '"+line+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := captureStdout(t, func() error {
		return trainBench([]string{"-backends", "go", "-st-python", fake, "-layers", "1", "-hidden", "16", "-heads", "2", "-batch", "4",
			"-vocab-size", "30522", "-steps", "2", "-warmup", "1", "-lengths", "full", "-encode-texts", "0"})
	})
	for _, want := range []string{"RSS MiB", "CPU s/step", "\nsentence-transformers ", " 100 ", "bf16 autocast: not measured, absent: test",
		"toolret-go / sentence-transformers tokens/s: ", "tokens per CPU second: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	err := trainBench([]string{"-backends", "go", "-st-python", filepath.Join(dir, "absent"), "-layers", "1", "-hidden", "16", "-heads", "2",
		"-batch", "4", "-steps", "1", "-lengths", "full", "-encode-texts", "0"})
	if err == nil || !strings.Contains(err.Error(), "sentence-transformers") {
		t.Errorf("absent venv: %v, want an error naming sentence-transformers", err)
	}
}

// captureStdout returns what f prints to stdout; f's error fails the test.
func captureStdout(t *testing.T, f func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	ferr := f()
	w.Close()
	os.Stdout = old
	b := <-done
	if ferr != nil {
		t.Fatalf("%v\n%s", ferr, b)
	}
	return string(b)
}

// TestTrainBenchBF16: -precision fp32,bf16 times a toolret-BACKEND-bf16 row beside the fp32
// one, each row's first field its name and second its tokens/s, with the sentence-transformers
// bf16 row and the ratio to it, and the CPU's flags; a bad precision is refused.
func TestTrainBenchBF16(t *testing.T) {
	if testing.Short() {
		t.Skip("times training steps and a matmul")
	}
	fake := filepath.Join(t.TempDir(), "python")
	line := `{"seconds": 2.0, "cpu_seconds": 4.0, "peak_rss": 104857600, "threads": 2, "torch": "2.15.0", "st": "6.2.0", "attn": "sdpa", "blas": "mkl", "fused_adamw": true, "bf16_seconds": 1.0, "bf16_note": "CPU has avx512_bf16", "mm_gflops": 100.0}`
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho '"+line+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := captureStdout(t, func() error {
		return trainBench([]string{"-backends", "go", "-precision", "fp32,bf16", "-st-python", fake, "-layers", "1", "-hidden", "16", "-heads", "2",
			"-batch", "4", "-vocab-size", "30522", "-steps", "2", "-warmup", "1", "-lengths", "full", "-encode-texts", "0"})
	})
	rows := map[string]float64{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			rows[f[0]] = v
		}
	}
	for _, name := range []string{"toolret-go", "toolret-go-bf16", "sentence-transformers", "sentence-transformers-bf16"} {
		if !(rows[name] > 0) {
			t.Errorf("no row %s with its tokens/s:\n%s", name, out)
		}
	}
	for _, want := range []string{"\ncpu: ", "toolret-go-bf16 / sentence-transformers-bf16 tokens/s: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if err := trainBench([]string{"-vs", "none", "-backends", "go", "-steps", "1", "-precision", "fp16"}); err == nil || !strings.Contains(err.Error(), `-precision "fp16"`) {
		t.Errorf("-precision fp16: %v, want an error naming -precision", err)
	}
}

func TestBackendPrecisions(t *testing.T) {
	for _, c := range []struct {
		list    string
		backend string
		want    []string
	}{
		{"fp32", "xla:cuda", []string{"fp32"}},
		{"auto", "xla:cuda", []string{"fp32", "bf16"}},
		{"auto", "go", []string{"fp32"}},
		{"auto", "xla:cpu", []string{"fp32", "bf16"}},
		{"auto", "xla", []string{"fp32", "bf16"}},
		{"auto", "onnx", []string{"fp32"}},
		{"bf16,auto", "go", []string{"bf16", "fp32"}},
		{"fp32,bf16", "onnx", []string{"fp32", "bf16"}},
	} {
		l, err := splitPrecisions(c.list)
		if err != nil {
			t.Fatal(err)
		}
		if got := backendPrecisions(l, c.backend); !reflect.DeepEqual(got, c.want) {
			t.Errorf("-precision %s on %s: %q, want %q", c.list, c.backend, got, c.want)
		}
	}
}
