package export

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/encoder"
)

// SetPrecision makes m embed with its encoders' matrix multiplications at precision p:
// backend.FP32 (or "") in float32, backend.BF16 in bfloat16 with float32 weights, LayerNorm
// and softmax (mixed precision, hflayers.ComputeParam; the vectors stay float32). bf16 is
// refused on the onnx backend (backend.SupportsBF16), together with int8 weights (Quantize),
// and for an encoder without the path (encoder.CheckCompute). Set it before the first Embed.
func (m *Model) SetPrecision(p string) error {
	dt := dtypes.Float32
	switch p {
	case "", backend.FP32:
		p = ""
	case backend.BF16:
		dt = dtypes.BFloat16
		if q := m.Quantization(); q.Int8() {
			return fmt.Errorf("precision bf16 and quantize %s: one or the other (int8 weights run on the onnx backend, bf16 on go or xla)", q)
		}
		if err := backend.SupportsBF16(backend.NameOf(m.Backend)); err != nil {
			return fmt.Errorf("precision bf16: %w", err)
		}
		for _, t := range m.Towers {
			if err := encoder.CheckCompute(t.Encoder, dt); err != nil {
				return fmt.Errorf("precision bf16: %w", err)
			}
		}
	default:
		return fmt.Errorf("precision %q: want %s or %s (resolve %s first: backend.ResolvePrecision)", p, backend.FP32, backend.BF16, backend.AutoPrecision)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.EmbedFn != nil {
		if m.setCompute == nil {
			if p != "" {
				return fmt.Errorf("precision bf16: %s embeds with its own function, which has no precision setting", m.Source)
			}
		} else {
			m.setCompute(dt)
		}
	}
	if p != m.precision {
		m.precision, m.runners = p, nil
	}
	return nil
}

// Precision returns the precision m embeds at: "" for fp32, backend.BF16 (SetPrecision).
func (m *Model) Precision() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.precision
}

// computeDType is the compute dtype of m's precision; m.mu held.
func (m *Model) computeDType() dtypes.DType {
	if m.precision == backend.BF16 {
		return dtypes.BFloat16
	}
	return dtypes.Float32
}
