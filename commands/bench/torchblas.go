package benchcmd

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// The PyTorch peer links Debian's OpenBLAS, which picks its kernels from the CPU model it
// detects. The reference run leaves OPENBLAS_CORETYPE unset (OpenBLAS's own detection); on a
// CPU model the installed OpenBLAS does not know (Emerald Rapids, family 6 model 207, under
// OpenBLAS 0.3.21) that detection falls back to "Prescott" (SSE3) kernels, several times slower
// than the AVX-512 ones the CPU has. -torch-blas adds PyTorch rows with a forced core type so a
// reader sees both: the reference and what the same PyTorch reaches with the right kernels.

// torchBLASFlag declares -torch-blas: the OpenBLAS core types PyTorch runs with.
func torchBLASFlag(fs *flag.FlagSet) *string {
	return fs.String("torch-blas", defaultTorchBLAS(), "OpenBLAS core types PyTorch runs with, comma-separated: auto (OPENBLAS_CORETYPE unset, the reference) and any OPENBLAS_CORETYPE value, e.g. SkylakeX (default adds it when the CPU has AVX-512)")
}

// defaultTorchBLAS is auto, plus SkylakeX on a CPU with AVX-512F.
func defaultTorchBLAS() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil && strings.Contains(string(b), " avx512f") {
		return "auto,SkylakeX"
	}
	return "auto"
}

// torchCores parses -torch-blas.
func torchCores(v string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, c := range strings.Split(v, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		for _, r := range c {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return nil, fmt.Errorf("-torch-blas %q: core type %q: letters and digits only", v, c)
			}
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-torch-blas %q: no core type (want auto and/or OPENBLAS_CORETYPE values)", v)
	}
	return out, nil
}

// torchEnv is the environment PyTorch runs with for core type c.
func torchEnv(c string) []string {
	env := withoutEnv(os.Environ(), "OPENBLAS_CORETYPE")
	if c != "auto" {
		env = append(env, "OPENBLAS_CORETYPE="+c)
	}
	return env
}

// torchRow names PyTorch's row for core type c.
func torchRow(c string) string {
	if c == "auto" {
		return "pytorch"
	}
	return "pytorch-" + c
}

// torchResult is the part of torch_train.py's and torch_encode.py's output line both share.
type torchResult struct {
	Seconds float64 `json:"seconds"`
	Threads int     `json:"threads"`
	Torch   string  `json:"torch"`
	MM      float64 `json:"mm_gflops"`
	BLAS    string  `json:"blas_core"`
}

// about is the row's trailing note.
func (r torchResult) about() string {
	return fmt.Sprintf("(torch %s, %d threads, OpenBLAS core %s)", r.Torch, r.Threads, r.BLAS)
}

// torchRows runs script on spec once per OpenBLAS core type and calls show with each row's
// name and result. A run that fails prints a "-" row and is returned in skipped (an
// errNotMeasured error, nil if none failed); output that cannot be read is an error.
func torchRows(python, script string, cores []string, spec any, w int, show func(row string, r torchResult)) (skipped, err error) {
	for _, core := range cores {
		row := torchRow(core)
		out, err := runTorch(python, script, core, spec)
		if err != nil {
			fmt.Printf("%-*s %12s (%v)\n", w, row, "-", err)
			skipped = errors.Join(skipped, fmt.Errorf("%w: %s: %v", errNotMeasured, row, err))
			continue
		}
		var r torchResult
		if err := json.Unmarshal(out, &r); err != nil || r.Seconds <= 0 {
			return skipped, fmt.Errorf("%s output %s: %v", row, out, err)
		}
		show(row, r)
	}
	return skipped, nil
}
