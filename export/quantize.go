package export

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/compute-onnx/support/protos"
	"google.golang.org/protobuf/proto"
)

// Quantization is how an encoder's weights are stored and multiplied: the -quantize flag of
// export, encode, eval and serve.
type Quantization string

// Quantizations.
const (
	// QuantDefault is no choice: fp32 for a model, an index's own (Manifest.Quantization) for
	// an index.
	QuantDefault Quantization = ""
	// QuantNone is fp32 weights, asked for explicitly (an int8 index then embeds its queries
	// in fp32).
	QuantNone Quantization = "none"
	// QuantInt8 is ONNX Runtime's dynamic quantization of every MatMul by a weight matrix
	// (QuantizeONNX): symmetric int8 weights with one scale per output channel, activations
	// quantized to uint8 per batch as they flow (DynamicQuantizeLinear + MatMulInteger).
	QuantInt8 Quantization = "int8"
	// QuantInt8Tensor is QuantInt8 with one scale per weight matrix (onnxruntime's
	// quantize_dynamic default, per_channel=False).
	QuantInt8Tensor Quantization = "int8-tensor"
)

// Quantizations lists the values ParseQuantization accepts, for flag help and errors.
const Quantizations = "int8 (per output channel), int8-tensor (per matrix) or none (fp32)"

// ParseQuantization reads a -quantize value ("" and "none" and "fp32" are fp32).
func ParseQuantization(s string) (Quantization, error) {
	switch q := Quantization(strings.ToLower(strings.TrimSpace(s))); q {
	case QuantDefault, QuantInt8, QuantInt8Tensor:
		return q, nil
	case QuantNone, "fp32", "float32":
		return QuantNone, nil
	}
	return "", fmt.Errorf("quantize %q: want %s", s, Quantizations)
}

// Int8 reports whether q stores int8 weights.
func (q Quantization) Int8() bool { return q == QuantInt8 || q == QuantInt8Tensor }

// Suffix is what a quantized ONNX file's name ends with before .onnx ("_int8"; "" for fp32):
// onnx/model_int8.onnx is where transformers.js looks for dtype "int8".
func (q Quantization) Suffix() string {
	if q.Int8() {
		return "_int8"
	}
	return ""
}

// QuantizeStats describes what QuantizeONNX changed.
type QuantizeStats struct {
	MatMuls int // MatMul nodes rewritten
	Weights int // weight matrices quantized
	// FloatBytes and Int8Bytes are the quantized matrices' size before and after (scales
	// included).
	FloatBytes, Int8Bytes int
}

// QuantizeONNX returns the serialized ONNX model with its weights quantized as q says
// (QuantInt8 or QuantInt8Tensor), as onnxruntime.quantization.quantize_dynamic writes it:
// every MatMul whose second input is a 2-D float initializer W [K, N] becomes
//
//	x_q, x_scale, x_zero = DynamicQuantizeLinear(x)          (uint8, one scale per call)
//	y = Cast(MatMulInteger(x_q, W_q, x_zero, W_zero)) * (x_scale * W_scale)
//
// with W_q = round(W / W_scale) in [-64, 64] (int8, zero point 0; Int8Max), W_scale = max|W| / 64
// per output channel (column) or per matrix. ONNX Runtime fuses the pattern into its
// DynamicQuantizeMatMul kernel. Other nodes (the embedding tables' Gather, LayerNorm, the
// attention's activation-by-activation MatMuls) stay fp32. A model with no such MatMul is an
// error.
func QuantizeONNX(model []byte, q Quantization) ([]byte, QuantizeStats, error) {
	var st QuantizeStats
	if !q.Int8() {
		return nil, st, fmt.Errorf("quantize: %q is not an int8 quantization (want %s)", q, Quantizations)
	}
	var mp protos.ModelProto
	if err := proto.Unmarshal(model, &mp); err != nil {
		return nil, st, fmt.Errorf("quantize: reading the ONNX model: %w", err)
	}
	g := mp.Graph
	if g == nil {
		return nil, st, fmt.Errorf("quantize: the ONNX model has no graph")
	}
	inits := map[string]*protos.TensorProto{}
	for _, t := range g.Initializer {
		inits[t.Name] = t
	}
	uses := map[string]int{}
	for _, n := range g.Node {
		for _, in := range n.Input {
			uses[in]++
		}
	}
	for _, o := range g.Output {
		uses[o.Name]++
	}
	weight := func(n *protos.NodeProto) *protos.TensorProto {
		if n.OpType != "MatMul" || n.Domain != "" || len(n.Input) != 2 {
			return nil
		}
		t := inits[n.Input[1]]
		if t == nil || t.DataType != int32(protos.TensorProto_FLOAT) || len(t.Dims) != 2 {
			return nil
		}
		return t
	}
	perChannel := q == QuantInt8
	type quantized struct{ q, scale, zero string }
	weights := map[string]quantized{}
	acts := map[string][3]string{}
	rewritten := map[string]int{}
	var nodes []*protos.NodeProto
	add := func(op string, in, out []string, attrs ...*protos.AttributeProto) {
		nodes = append(nodes, &protos.NodeProto{Name: out[0], OpType: op, Input: in, Output: out, Attribute: attrs})
	}
	for _, n := range g.Node {
		w := weight(n)
		if w == nil {
			nodes = append(nodes, n)
			continue
		}
		k, cols := int(w.Dims[0]), int(w.Dims[1])
		qw, ok := weights[w.Name]
		if !ok {
			data, err := floatData(w)
			if err != nil {
				return nil, st, fmt.Errorf("quantize: initializer %s: %w", w.Name, err)
			}
			if len(data) != k*cols {
				return nil, st, fmt.Errorf("quantize: initializer %s has %d values for shape [%d, %d]", w.Name, len(data), k, cols)
			}
			vals, scales := QuantizeWeights(data, k, cols, perChannel)
			qw = quantized{w.Name + "_quantized", w.Name + "_scale", w.Name + "_zero_point"}
			raw := make([]byte, len(vals))
			for i, v := range vals {
				raw[i] = byte(v)
			}
			var sdims []int64
			if perChannel {
				sdims = []int64{int64(cols)}
			}
			g.Initializer = append(g.Initializer,
				&protos.TensorProto{Name: qw.q, DataType: int32(protos.TensorProto_INT8), Dims: []int64{int64(k), int64(cols)}, RawData: raw},
				&protos.TensorProto{Name: qw.scale, DataType: int32(protos.TensorProto_FLOAT), Dims: sdims, FloatData: scales},
				&protos.TensorProto{Name: qw.zero, DataType: int32(protos.TensorProto_INT8), Dims: sdims, RawData: make([]byte, len(scales))})
			weights[w.Name] = qw
			st.Weights++
			st.FloatBytes += 4 * len(data)
			st.Int8Bytes += len(vals) + 5*len(scales)
		}
		x := n.Input[0]
		a, ok := acts[x]
		if !ok {
			a = [3]string{x + "_quantized", x + "_scale", x + "_zero_point"}
			add("DynamicQuantizeLinear", []string{x}, a[:])
			acts[x] = a
		}
		out := n.Output[0]
		add("MatMulInteger", []string{a[0], qw.q, a[2], qw.zero}, []string{out + "_int32"})
		add("Cast", []string{out + "_int32"}, []string{out + "_float"}, &protos.AttributeProto{Name: "to", Type: protos.AttributeProto_INT, I: int64(protos.TensorProto_FLOAT)})
		add("Mul", []string{a[1], qw.scale}, []string{out + "_scales"})
		add("Mul", []string{out + "_float", out + "_scales"}, []string{out})
		rewritten[w.Name]++
		st.MatMuls++
	}
	if st.MatMuls == 0 {
		return nil, st, fmt.Errorf("quantize: graph %q has no MatMul by a constant float matrix: nothing to quantize", g.Name)
	}
	g.Node = nodes
	kept := g.Initializer[:0]
	for _, t := range g.Initializer {
		if n, ok := rewritten[t.Name]; ok && n == uses[t.Name] {
			continue // every use now reads the int8 copy
		}
		kept = append(kept, t)
	}
	g.Initializer = kept
	for _, o := range mp.OpsetImport {
		if o.Domain == "" && o.Version < 10 {
			o.Version = 10 // DynamicQuantizeLinear and MatMulInteger
		}
	}
	mp.DocString = strings.TrimSpace(mp.DocString + " " + fmt.Sprintf("weights quantized: %s (%d MatMuls)", q, st.MatMuls))
	out, err := proto.Marshal(&mp)
	if err != nil {
		return nil, st, fmt.Errorf("quantize: %w", err)
	}
	return out, st, nil
}

// Int8Max bounds the int8 weights: [-64, 64], 7 bits, as quantize_dynamic's reduce_range=True
// writes them. With 8 bits, x86 kernels without VNNI (AVX2's vpmaddubsw adds two uint8 × int8
// products in int16) saturate: all-MiniLM-L6-v2 with full-range per-channel weights gave
// embeddings at cosine 0.98 of fp32 on an AVX2 machine, the tiny test BERT 0.980 against
// 0.9993 with 7 bits. 255 × 64 × 2 = 32640 fits int16.
const Int8Max = 64

// QuantizeWeights quantizes w [k, n] (row-major, MatMul's second input: n output channels) to
// symmetric int8: scales holds one scale per column with perChannel, else one for the matrix
// (max|w| / Int8Max; 1 for an all-zero column), and q[i] = round-half-even(w[i] / scale) in
// [-Int8Max, Int8Max], so that |q[i]·scale - w[i]| <= scale/2.
func QuantizeWeights(w []float32, k, n int, perChannel bool) (q []int8, scales []float32) {
	const qmax = Int8Max
	ns := 1
	if perChannel {
		ns = n
	}
	scales = make([]float32, ns)
	for i, v := range w {
		c := 0
		if perChannel {
			c = i % n
		}
		scales[c] = max(scales[c], float32(math.Abs(float64(v))))
	}
	for c, m := range scales {
		if scales[c] = m / qmax; m == 0 {
			scales[c] = 1
		}
	}
	q = make([]int8, len(w))
	for i, v := range w {
		c := 0
		if perChannel {
			c = i % n
		}
		r := math.RoundToEven(float64(v / scales[c]))
		q[i] = int8(max(-qmax, min(qmax, r)))
	}
	return q, scales
}

// floatData returns a float initializer's values, stored raw (little endian) or as float_data.
func floatData(t *protos.TensorProto) ([]float32, error) {
	if len(t.RawData) > 0 {
		if len(t.RawData)%4 != 0 {
			return nil, fmt.Errorf("%d raw bytes are not float32 values", len(t.RawData))
		}
		out := make([]float32, len(t.RawData)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.RawData[4*i:]))
		}
		return out, nil
	}
	if t.DataLocation == protos.TensorProto_EXTERNAL {
		return nil, fmt.Errorf("weights stored outside the model file are not read")
	}
	return t.FloatData, nil
}
