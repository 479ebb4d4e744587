package benchcmd

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/models/biencoder"
)

// TestTrainStepFLOPs checks the formula on a case worked by hand: 1 layer, hidden 2,
// intermediate 4, batch 2, queries of 3 and tools of 5 tokens. Forward per sequence of S
// tokens: 2·S·(4·2·2 + 2·2·4) = 64·S for the projections and feed-forward, 4·S²·2 = 8·S²
// for attention; queries 2·(192+72) = 528, tools 2·(320+200) = 1040, scores 2·2·2·2 = 16;
// forward 1584, times 3 with the backward pass.
func TestTrainStepFLOPs(t *testing.T) {
	if got := trainStepFLOPs(1, 2, 4, 2, 3, 5); got != 4752 {
		t.Errorf("trainStepFLOPs = %v, want 4752", got)
	}
	if got := encoderForwardFLOPs(2, 2, 4, 3, 5); got != 2*3*(64*5+8*25) {
		t.Errorf("encoderForwardFLOPs = %v, want %v", got, 2*3*(64*5+8*25))
	}
}

func TestPadLen(t *testing.T) {
	for _, c := range []struct {
		p            biencoder.Padding
		n, max, want int
	}{{16, 17, 64, 32}, {16, 3, 64, 16}, {16, 50, 56, 56}, {biencoder.PadFixed, 3, 64, 64}, {8, 64, 64, 64}} {
		if got := padLen(c.p, c.n, c.max); got != c.want {
			t.Errorf("padLen(%v, %d, %d) = %d, want %d", c.p, c.n, c.max, got, c.want)
		}
	}
}

// TestLengthSamplers: the built-in quantiles stay in range and have about the right median;
// with a dataset the lengths are its texts'.
func TestLengthSamplers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	q, tl, src := toolLensLengths("missing-dir", "missing.txt")
	if !strings.Contains(src, "built-in") {
		t.Errorf("source %q without a dataset", src)
	}
	below := 0
	for range 10000 {
		n, m := q(r), tl(r)
		if n < 8 || n > 144 || m < 54 || m > 1051 {
			t.Fatalf("lengths %d, %d outside the quantiles' range", n, m)
		}
		if n <= 31 {
			below++
		}
	}
	if below < 4700 || below > 5300 {
		t.Errorf("%d of 10000 query lengths <= the median 31", below)
	}
}

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
	args := []string{"-backends", "go", "-python", "", "-layers", "1", "-hidden", "16", "-heads", "2", "-batch", "4",
		"-steps", "3", "-lengths", "toollens", "-data", "missing-dir", "-pad-multiple", "8", "-profile", prof}
	if err := trainBench(args); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(prof); err != nil || st.Size() == 0 {
		t.Errorf("profile %s: %v", prof, err)
	}
	err := trainBench([]string{"-backend", "xla:cuda", "-python", "", "-layers", "1", "-hidden", "16", "-heads", "2", "-steps", "1"})
	if err == nil || !strings.Contains(err.Error(), "no toolret backend could be opened (xla:cuda)") {
		t.Errorf("-backend xla:cuda here: %v", err)
	}
	for _, c := range []struct{ args []string }{{[]string{"-shape", "huge"}}, {[]string{"-lengths", "some"}}, {[]string{"-pad-multiple", "-1"}}} {
		if err := trainBench(append(c.args, "-python", "", "-backends", "go", "-steps", "1")); err == nil || !strings.Contains(err.Error(), c.args[0]) {
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
