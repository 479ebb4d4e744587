// Package benchmark measures toolret's engines, as cmd/bench does: the matmul FLOPs of BERT
// encoders and bi-encoder training steps (EncoderForwardFLOPs, TrainStepFLOPs), a backend's
// matmul peak (MatmulPeak), timed encoding and training passes over recorded batches
// (RecordEncodeBatches, TimeEncode, PlanTrain, TimeTrain), and an HTTP server's load test
// with a concurrent writer and a consistency check (LoadTest).
package benchmark

import (
	"math/rand/v2"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// Matmul FLOPs of a BERT encoder (the formula the README's Benchmarks section gives). A
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

// EncoderForwardFLOPs is the forward matmul FLOPs of rows sequences of padded length seq.
func EncoderForwardFLOPs(layers, hidden, inter, rows, seq int) float64 {
	h, i, s := float64(hidden), float64(inter), float64(seq)
	return float64(rows) * float64(layers) * (2*s*(4*h*h+2*h*i) + 4*s*s*h)
}

// TrainStepFLOPs is the forward+backward matmul FLOPs of one bi-encoder step: batch queries
// of padded length qSeq, batch tools of padded length tSeq, in-batch InfoNCE scores.
func TrainStepFLOPs(layers, hidden, inter, batch, qSeq, tSeq int) float64 {
	fwd := EncoderForwardFLOPs(layers, hidden, inter, batch, qSeq) + EncoderForwardFLOPs(layers, hidden, inter, batch, tSeq) +
		2*float64(batch)*float64(batch)*float64(hidden)
	return 3 * fwd
}

// MatmulPeak measures the fp32 matmul throughput of a backend in GFLOP/s: n×n by n×n
// products, four chained per call (one host copy per call), the best of several timed
// rounds of about half a second.
func MatmulPeak(be compute.Backend, n int) (float64, error) {
	return MatmulPeakDType(be, n, dtypes.Float32)
}

// MatmulPeakDType is MatmulPeak with the products in dt (the fp32 inputs converted in the
// graph, the result converted back, neither conversion counted).
func MatmulPeakDType(be compute.Backend, n int, dt dtypes.DType) (float64, error) {
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
