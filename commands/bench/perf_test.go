package benchcmd

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
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
