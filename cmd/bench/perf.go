package benchcmd

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/toolret/toolret/backend"
)

// Matmul FLOPs of a BERT encoder (the formula README's Benchmarks section gives). A
// multiply-add counts 2 FLOPs. Per layer and sequence of S tokens (padding included: the
// hardware computes it), hidden H, intermediate I:
//
//	Q, K, V and output projections  4 · 2·S·H·H = 8·S·H²
//	feed-forward (in and out)       2 · 2·S·H·I = 4·S·H·I
//	attention scores Q·Kᵀ and P·V   2 · 2·S·S·H = 4·S²·H
//
// so a forward pass is L·(2·S·(4H² + 2HI) + 4·S²·H) per sequence: 2 × the matmul
// parameters × the tokens, plus attention. A backward pass costs twice the forward (the
// gradients with respect to the inputs and to the weights), so a training step is
// 3 × forward = L·(6·S·(4H² + 2HI) + 12·S²·H) per sequence, plus the InfoNCE scores,
// 3 · 2·B·B'·H for B queries against B' tools. Embedding lookups, LayerNorm, softmax, GELU,
// the optimizer and DeBERTa's relative-position terms are not counted (DeBERTa's figure is
// a lower bound).

// encoderForwardFLOPs is the forward matmul FLOPs of rows sequences of padded length seq.
func encoderForwardFLOPs(layers, hidden, inter, rows, seq int) float64 {
	h, i, s := float64(hidden), float64(inter), float64(seq)
	return float64(rows) * float64(layers) * (2*s*(4*h*h+2*h*i) + 4*s*s*h)
}

// trainStepFLOPs is the forward+backward matmul FLOPs of one bi-encoder step: batch queries
// of padded length qSeq, batch tools of padded length tSeq, in-batch InfoNCE scores.
func trainStepFLOPs(layers, hidden, inter, batch, qSeq, tSeq int) float64 {
	fwd := encoderForwardFLOPs(layers, hidden, inter, batch, qSeq) + encoderForwardFLOPs(layers, hidden, inter, batch, tSeq) +
		2*float64(batch)*float64(batch)*float64(hidden)
	return 3 * fwd
}

// matmulPeak measures the fp32 matmul throughput of a backend in GFLOP/s: n×n by n×n
// products, four chained per call (one host copy per call), the best of several timed
// rounds of about half a second.
func matmulPeak(be compute.Backend, n int) (float64, error) {
	return matmulPeakDType(be, n, dtypes.Float32)
}

// matmulPeakDType is matmulPeak with the products in dt (the fp32 inputs converted in the
// graph, the result converted back, neither conversion counted).
func matmulPeakDType(be compute.Backend, n int, dt dtypes.DType) (float64, error) {
	const chain = 4
	exec, err := NewExec(be, func(a, b *Node) *Node {
		x, y := ConvertDType(a, dt), ConvertDType(b, dt)
		for range chain {
			x = MatMul(x, y)
		}
		return ConvertDType(x, dtypes.Float32)
	})
	if err != nil {
		return 0, err
	}
	r := rand.New(rand.NewPCG(1, 1))
	mk := func(scale float64) *tensors.Tensor {
		v := make([]float32, n*n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale)
		}
		return tensors.FromFlatDataAndDimensions(v, n, n)
	}
	a, b := mk(1), mk(1/float64(n)) // b keeps the chained products' magnitude ~1
	call := func() error {
		out, err := exec.Exec(a, b)
		if err != nil {
			return err
		}
		_, err = tensors.CopyFlatData[float32](out[0]) // wait for the result
		return err
	}
	if err := call(); err != nil { // compile
		return 0, err
	}
	best := 0.0
	for range 3 {
		calls, start := 0, time.Now()
		for calls == 0 || time.Since(start) < 500*time.Millisecond {
			if err := call(); err != nil {
				return 0, err
			}
			calls++
		}
		best = max(best, float64(calls)*chain*2*float64(n)*float64(n)*float64(n)/time.Since(start).Seconds()/1e9)
	}
	return best, nil
}

// openBackends opens each named backend, printing a skip line (name and reason) for those
// that cannot be opened; skipped lists them.
func openBackends(list string, width int) (names []string, bes []compute.Backend, skipped []string) {
	for _, name := range splitBackends(list) {
		be, err := backend.Open(name)
		if err != nil {
			fmt.Printf("%-*s skipped: cannot open backend %q: %v\n", width, "toolret-"+name, name, err)
			skipped = append(skipped, name)
			continue
		}
		names, bes = append(names, name), append(bes, be)
	}
	return names, bes, skipped
}

// splitBackends splits a -backends list at commas, keeping a backend's own options with it:
// an entry starts at a part with a ':' or a bare backend name (go, onnx, onnxruntime, xla),
// any other part (intra_threads=1, parallel) belongs to the entry before it, so
// "go,onnx:cpu,intra_threads=1" is go and onnx:cpu,intra_threads=1.
func splitBackends(list string) []string {
	var out []string
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		switch {
		case strings.Contains(p, ":"), p == "go", p == "onnx", p == "onnxruntime", p == "xla", len(out) == 0:
			out = append(out, p)
		default:
			out[len(out)-1] += "," + p
		}
	}
	return out
}

// errNotMeasured marks a run that measured what it could but skipped an engine: the
// command goes on with the others and exits with status 1.
var errNotMeasured = errors.New("not measured")

// skippedError returns an errNotMeasured error naming the skipped backends, nil if none.
func skippedError(skipped []string) error {
	if len(skipped) == 0 {
		return nil
	}
	return fmt.Errorf("%w: backends %s", errNotMeasured, strings.Join(skipped, ", "))
}

// profilePath is the CPU profile file of one backend: file itself when only one backend is
// measured, else file with "-NAME" before its extension (NAME with ':' and ',' as '_').
func profilePath(file, name string, several bool) string {
	if file == "" || !several {
		return file
	}
	ext := filepath.Ext(file)
	safe := strings.NewReplacer(":", "_", ",", "_", "/", "_", "=", "_").Replace(name)
	return strings.TrimSuffix(file, ext) + "-" + safe + ext
}

// profile runs f under a Go CPU profile written to path ("" runs f alone).
func profile(path string, f func() error) error {
	if path == "" {
		return f()
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return fmt.Errorf("-profile %s: %w", path, err)
	}
	ferr := f()
	pprof.StopCPUProfile()
	if err := out.Close(); err != nil && ferr == nil {
		return fmt.Errorf("-profile %s: %w", path, err)
	}
	return ferr
}
