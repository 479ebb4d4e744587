package backend

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
)

func TestNativeBF16(t *testing.T) {
	old := cpuFlagsFile
	defer func() { cpuFlagsFile = old }()
	for _, c := range []struct {
		flags, backend string
		wantFlags      []string
		native         bool
		auto           string
	}{
		{"fpu avx2 avx512f avx512_bf16 amx_bf16 amx_int8", "xla:cpu", []string{"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_int8"}, true, BF16},
		{"fpu avx2 avx512_bf16", "xla", []string{"avx2", "avx512_bf16"}, false, FP32},
		{"fpu avx2 avx512_bf16 amx_bf16", "xla", []string{"avx2", "avx512_bf16", "amx_bf16"}, true, BF16},
		{"fpu avx2", "xla:cpu", []string{"avx2"}, false, FP32},
		{"fpu avx2 avx512_bf16", "go", []string{"avx2", "avx512_bf16"}, false, FP32},
		{"fpu avx2 avx512_bf16", "onnx", []string{"avx2", "avx512_bf16"}, false, FP32},
		{"fpu", "xla:cuda,preallocate=false", nil, true, BF16},
	} {
		cpuFlagsFile = filepath.Join(t.TempDir(), "cpuinfo")
		if err := os.WriteFile(cpuFlagsFile, []byte("processor\t: 0\nflags\t\t: "+c.flags+"\n\nprocessor\t: 1\nflags\t\t: "+c.flags+" amx_tile\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := CPUFlags(); !slices.Equal(got, c.wantFlags) {
			t.Errorf("flags %q: CPUFlags %v, want %v", c.flags, got, c.wantFlags)
		}
		native, why := NativeBF16(c.backend)
		if native != c.native || why == "" {
			t.Errorf("flags %q, %s: NativeBF16 %v (%s), want %v", c.flags, c.backend, native, why, c.native)
		}
		p, dt, line, err := ResolvePrecision("-precision", AutoPrecision, c.backend)
		if err != nil || p != c.auto || (dt == dtypes.BFloat16) != (p == BF16) || !strings.Contains(line, "auto: "+p) {
			t.Errorf("flags %q, %s: auto -> %q, %s, %q, %v; want %s", c.flags, c.backend, p, dt, line, err, c.auto)
		}
	}
	if _, _, _, err := ResolvePrecision("-precision", "bf17", "go"); err == nil || !strings.Contains(err.Error(), `-precision "bf17"`) {
		t.Errorf("bf17: %v, want an error naming -precision", err)
	}
	if _, _, _, err := ResolvePrecision("-precision", BF16, "onnx"); err == nil || !strings.Contains(err.Error(), "no bfloat16 MatMul") {
		t.Errorf("bf16 on onnx: %v, want a refusal", err)
	}
}
