package backend

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
)

// Precisions of the encoders' computation (the -precision flags).
const (
	// FP32 computes everything in float32 (the default).
	FP32 = "fp32"
	// BF16 is mixed precision: the matrix multiplications in bfloat16 (inputs and weights
	// converted, the products converted back), the variables (master weights), LayerNorm,
	// softmax, the loss and the optimizer state in float32 (hflayers.ComputeParam).
	BF16 = "bf16"
	// AutoPrecision is BF16 where the backend has native bfloat16 matrix multiplication
	// (NativeBF16: xla:cuda, XLA on an AMX CPU), else FP32.
	AutoPrecision = "auto"
)

// Precisions lists the accepted precision names.
var Precisions = []string{FP32, BF16, AutoPrecision}

// CheckPrecision checks a precision name; field names the setting in the error.
func CheckPrecision(field, p string) error {
	switch p {
	case FP32, BF16, AutoPrecision:
		return nil
	}
	return fmt.Errorf("%s %q: want %s", field, p, strings.Join(Precisions, ", "))
}

// cpuFlagsFile is read by CPUFlags (a variable for tests).
var cpuFlagsFile = "/proc/cpuinfo"

// BF16CPUFlags are the x86 CPU flags that matter to bfloat16 and int8 matrix multiplication,
// in the order CPUFlags reports them.
var BF16CPUFlags = []string{"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8"}

// CPUFlags returns which of BF16CPUFlags the CPU has (from /proc/cpuinfo's first "flags"
// line), in that order; nil where /proc/cpuinfo is not readable.
func CPUFlags() []string {
	b, err := os.ReadFile(cpuFlagsFile)
	if err != nil {
		return nil
	}
	have := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "flags" {
			for _, f := range strings.Fields(v) {
				have[f] = true
			}
			break
		}
	}
	var out []string
	for _, f := range BF16CPUFlags {
		if have[f] {
			out = append(out, f)
		}
	}
	return out
}

// NativeBF16 reports whether the backend name (as Open takes it) multiplies bfloat16
// matrices natively, and why: XLA on CUDA (GPUs before Ampere emulate it) and, pending a
// measurement, XLA on a CPU with AMX (amx_bf16). Not XLA on a CPU with avx512_bf16 alone:
// there XLA's CPU plugin rewrites every bfloat16 dot into a float32 one (its optimized HLO
// shows f32 dots between converts, measured on 2026-11-29; docs/results/2026-11-29-bf16.md),
// so bf16 runs no faster than fp32. The go backend computes bfloat16 products without a fast
// kernel, and the onnx backend not at all (SupportsBF16).
func NativeBF16(name string) (bool, string) {
	cfg := Config(Name(name))
	platform, _, _ := strings.Cut(cfg, ",")
	switch {
	case platform == "xla:cuda" || platform == "cuda":
		return true, "xla:cuda"
	case platform == "xla:cpu" || platform == "xla":
		flags := CPUFlags()
		if slices.Contains(flags, "amx_bf16") {
			return true, "xla:cpu on a CPU with amx_bf16"
		}
		if slices.Contains(flags, "avx512_bf16") {
			return false, "xla:cpu computes bfloat16 dots in float32 on a CPU without AMX (avx512_bf16 alone: measured no faster)"
		}
		return false, "xla:cpu on a CPU without amx_bf16 (XLA computes bfloat16 dots in float32 there)"
	}
	return false, platform + " has no native bfloat16 matrix multiplication"
}

// SupportsBF16 returns nil when the backend name can run the bf16 precision, else why not:
// XLA (CPU, emulating bfloat16 where the CPU lacks it, and CUDA) and the go backend can; the
// onnx backend refuses the BFloat16 dtype ("not supported by ONNX Runtime (CPU) compute
// backend for GoMLX"), and ONNX Runtime's CPU provider has no bfloat16 MatMul kernel.
func SupportsBF16(name string) error {
	cfg := Config(Name(name))
	if strings.HasPrefix(cfg, "onnx") {
		return fmt.Errorf("backend %s: the onnx backend does not run bfloat16 (GoMLX's ONNX Runtime backend refuses the dtype; ONNX Runtime's CPU provider has no bfloat16 MatMul): use -backend xla:cpu, xla:cuda or go for bf16", cfg)
	}
	return nil
}

// ResolvePrecision resolves the precision p (field names the setting in errors) for the
// backend name: FP32 stays, BF16 is refused where SupportsBF16 says so, AutoPrecision becomes
// BF16 where NativeBF16, else FP32. It returns the precision taken, its compute dtype
// (Float32 or BFloat16) and a line saying which was chosen and why.
func ResolvePrecision(field, p, name string) (string, dtypes.DType, string, error) {
	if err := CheckPrecision(field, p); err != nil {
		return "", dtypes.InvalidDType, "", err
	}
	switch p {
	case FP32:
		return FP32, dtypes.Float32, "precision fp32", nil
	case BF16:
		if err := SupportsBF16(name); err != nil {
			return "", dtypes.InvalidDType, "", fmt.Errorf("%s %s: %w", field, p, err)
		}
		native, why := NativeBF16(name)
		if !native {
			return BF16, dtypes.BFloat16, "precision bf16 (emulated: " + why + ")", nil
		}
		return BF16, dtypes.BFloat16, "precision bf16 (" + why + ")", nil
	}
	native, why := NativeBF16(name)
	if !native || SupportsBF16(name) != nil {
		return FP32, dtypes.Float32, "precision auto: fp32 (" + why + ")", nil
	}
	return BF16, dtypes.BFloat16, "precision auto: bf16 (" + why + ")", nil
}

// CPUModel returns /proc/cpuinfo's first "model name" ("" where it has none).
func CPUModel() string {
	b, err := os.ReadFile(cpuFlagsFile)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// CPUSummary is one line naming the CPU and which of BF16CPUFlags it has and lacks, for
// benchmark output: "Intel Xeon ...; avx2 avx512_bf16; no amx_bf16 amx_int8".
func CPUSummary() string {
	have := CPUFlags()
	var lacks []string
	for _, f := range BF16CPUFlags {
		if !slices.Contains(have, f) {
			lacks = append(lacks, f)
		}
	}
	s := CPUModel()
	if s == "" {
		s = "unknown CPU"
	}
	s += "; flags: " + strings.Join(have, " ")
	if len(lacks) > 0 {
		s += "; lacks: " + strings.Join(lacks, " ")
	}
	return s
}

// NameOf returns the name (as Open, NativeBF16 and ResolvePrecision take it) of an opened
// backend: "onnx", "xla:<plugin>" ("xla:cpu", "xla:cuda"), "go"; Default for nil.
func NameOf(be compute.Backend) string {
	switch {
	case be == nil:
		return Default
	case be.Name() == "onnx" || be.Name() == "onnxruntime":
		return "onnx"
	}
	if p, ok := be.(interface{ PluginName() string }); ok && be.Name() == "xla" {
		return "xla:" + p.PluginName()
	}
	return be.String()
}
