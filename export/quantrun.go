package export

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/encoder"
)

// CheckQuantization reports whether be can run an encoder with weights quantized as q: fp32
// runs everywhere, int8 on the onnx backend only (ONNX Runtime's integer kernels; GoMLX's
// go and xla backends have none, and a dequantize-then-fp32 graph would be slower than fp32).
func CheckQuantization(be compute.Backend, q Quantization) error {
	if _, err := ParseQuantization(string(q)); err != nil {
		return err
	}
	if !q.Int8() || backend.RunsONNX(be) {
		return nil
	}
	name := "none"
	if be != nil {
		name = be.Name()
	}
	return fmt.Errorf("quantize %s: int8 weights run on the onnx backend only (-backend onnx, a binary built with -tags onnx); backend %q runs fp32 weights (-quantize none)", q, name)
}

// Quantize makes m embed with weights quantized as q (QuantDefault and QuantNone: fp32, the
// encoder graph on m's backend, which on the onnx backend is one ONNX Runtime session of the
// tower's ONNX graph; QuantInt8: that graph quantized, QuantizeONNX, on the onnx backend). Embed, Pooled and Score then use it. A trained run's model (EmbedFn set) is
// refused: export it with FormatHF first.
func (m *Model) Quantize(q Quantization) error {
	if err := CheckQuantization(m.Backend, q); err != nil {
		return err
	}
	if q.Int8() {
		if m.EmbedFn != nil {
			return fmt.Errorf("quantize %s: %s is a trained run, which embeds as its training code does: export it with -format hf and quantize that", q, m.Source)
		}
		for _, t := range m.Towers {
			if _, ok := t.Encoder.(encoder.ONNX); !ok {
				return fmt.Errorf("quantize %s: model_type %s has no ONNX graph to quantize", q, t.Encoder.ModelType())
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if q == QuantNone {
		q = QuantDefault
	}
	if q != m.quant {
		m.quant, m.qcalls = q, nil
	}
	return nil
}

// Quantization returns how m's weights are quantized (QuantDefault: fp32).
func (m *Model) Quantization() Quantization {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.quant
}

// quantCall returns tower t's ONNX Runtime session call (NewONNXCall, quantized as m says)
// with pooling p, built once.
func (m *Model) quantCall(t *Tower, p encoder.Pooling) (encoder.Call, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := t.Base + "|" + string(p)
	if c := m.qcalls[key]; c != nil {
		return c, nil
	}
	c, err := NewONNXCall(m.Backend, m.Store, t.Base, t.Encoder, p, m.quant)
	if err != nil {
		return nil, err
	}
	if m.qcalls == nil {
		m.qcalls = map[string]encoder.Call{}
	}
	m.qcalls[key] = c
	return c, nil
}

// NewONNXCall is encoder.NewRunner's Call run as one ONNX Runtime session: the encoder cfg
// over the variables under base in store, with pooling p (unnormalised; PoolNone: the last
// hidden states), written as ONNX (ONNX), quantized as q says (QuantizeONNX; QuantDefault and
// QuantNone: fp32 as written) and compiled once on be, which must be the onnx backend. One
// session takes every batch shape, where GoMLX compiles (and keeps the weights for) a graph
// per shape.
func NewONNXCall(be compute.Backend, store *model.Store, base string, cfg encoder.Config, p encoder.Pooling, q Quantization) (encoder.Call, error) {
	if _, err := ParseQuantization(string(q)); err != nil {
		return nil, err
	}
	if err := CheckQuantization(be, q); err != nil {
		return nil, err
	}
	pool, out := p, 1 // outputs: last_hidden_state, sentence_embedding
	if p == encoder.PoolNone {
		pool, out = encoder.PoolCLS, 0
	}
	fp32, err := ONNX(&Model{Kind: KindBiEncoder, Store: store}, &Tower{Base: base, Encoder: cfg, Pooling: pool})
	if err != nil {
		return nil, err
	}
	b := fp32
	if q.Int8() {
		if b, _, err = QuantizeONNX(fp32, q); err != nil {
			return nil, err
		}
	}
	exec, err := backend.LoadONNX(be, b)
	if err != nil {
		return nil, fmt.Errorf("encoder as an ONNX Runtime session (quantize %q): %w", q, err)
	}
	names, _ := exec.Inputs()
	return func(ids, types, mask *tensors.Tensor) (*tensors.Tensor, error) {
		byName := map[string]*tensors.Tensor{InputIDs: ids, TokenTypeIDs: types, AttentionMask: mask}
		in := make([]compute.Buffer, len(names))
		defer func() {
			for _, b := range in {
				if b != nil {
					b.Finalize()
				}
			}
		}()
		for i, n := range names {
			t := byName[n]
			if t == nil {
				return nil, fmt.Errorf("onnx encoder: unknown input %q", n)
			}
			v, err := tensors.CopyFlatData[int32](t)
			if err != nil {
				return nil, fmt.Errorf("onnx encoder: input %s: %w", n, err)
			}
			w := make([]int64, len(v))
			for k, x := range v {
				w[k] = int64(x)
			}
			if in[i], err = be.BufferFromFlatData(0, w, shapes.Make(dtypes.Int64, t.Shape().Dimensions...)); err != nil {
				return nil, fmt.Errorf("onnx encoder: input %s: %w", n, err)
			}
		}
		res, err := exec.Execute(in, nil, 0)
		if err != nil {
			return nil, fmt.Errorf("onnx encoder: %w", err)
		}
		defer func() {
			for _, b := range res {
				b.Finalize()
			}
		}()
		if len(res) <= out {
			return nil, fmt.Errorf("onnx encoder: %d outputs, want %d", len(res), out+1)
		}
		sh, err := res[out].Shape()
		if err != nil {
			return nil, fmt.Errorf("onnx encoder: %w", err)
		}
		flat := make([]float32, sh.Size())
		if err := res[out].ToFlatData(flat); err != nil {
			return nil, fmt.Errorf("onnx encoder: %w", err)
		}
		return tensors.FromFlatDataAndDimensions(flat, sh.Dimensions...), nil
	}, nil
}
