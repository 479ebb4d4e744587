package export

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/toolret/toolret/models/bert"
	"google.golang.org/protobuf/proto"
)

// ONNX graph constants.
const (
	ONNXOpset     = 17
	onnxIRVersion = 8
	// ONNX input and output names.
	InputIDs      = "input_ids"
	AttentionMask = "attention_mask"
	TokenTypeIDs  = "token_type_ids"
	OutEmbedding  = "embedding"
	OutLogits     = "logits"
	OutScore      = "score"
	OutProbs      = "probabilities"
)

// writeONNX writes one .onnx file per tower (model.onnx, or query.onnx and tool.onnx) with the
// tokenizer files beside them.
func writeONNX(m *Model, root string, man *Manifest) error {
	for i := range m.Towers {
		t := &m.Towers[i]
		name, key := "model.onnx", "model"
		if len(m.Towers) > 1 {
			name, key = t.Name+".onnx", t.Name
		}
		b, err := ONNX(m, t)
		if err != nil {
			return err
		}
		if err := writeFile(root, name, b); err != nil {
			return err
		}
		man.Towers[key] = name
	}
	if err := m.Tok.Save(root); err != nil {
		return fmt.Errorf("export: tokenizer: %w", err)
	}
	return nil
}

// graphBuilder assembles an ONNX graph; every node has one output named after it.
type graphBuilder struct {
	g    *protos.GraphProto
	seen map[string]bool
	n    int
}

func (b *graphBuilder) fresh(prefix string) string {
	b.n++
	return fmt.Sprintf("%s_%d", prefix, b.n)
}

func (b *graphBuilder) op(opType string, inputs []string, attrs ...*protos.AttributeProto) string {
	out := b.fresh(opType)
	b.g.Node = append(b.g.Node, &protos.NodeProto{Name: out, OpType: opType, Input: inputs, Output: []string{out}, Attribute: attrs})
	return out
}

// rename makes the last node's output the graph value name.
func (b *graphBuilder) rename(name string) {
	last := b.g.Node[len(b.g.Node)-1]
	last.Output[0] = name
}

func (b *graphBuilder) initializer(t *protos.TensorProto) string {
	if b.seen[t.Name] {
		panic("duplicate initializer " + t.Name) // programming error: names are generated
	}
	b.seen[t.Name] = true
	b.g.Initializer = append(b.g.Initializer, t)
	return t.Name
}

func (b *graphBuilder) f32(name string, data []float32, dims ...int) string {
	raw := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return b.initializer(&protos.TensorProto{Name: name, DataType: int32(protos.TensorProto_FLOAT), Dims: int64s(dims), RawData: raw})
}

func (b *graphBuilder) i64(name string, data []int64, dims ...int) string {
	raw := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
	}
	return b.initializer(&protos.TensorProto{Name: name, DataType: int32(protos.TensorProto_INT64), Dims: int64s(dims), RawData: raw})
}

func (b *graphBuilder) scalarF(name string, v float32) string { return b.f32(name, []float32{v}) }

func int64s(d []int) []int64 {
	out := make([]int64, len(d))
	for i, v := range d {
		out[i] = int64(v)
	}
	return out
}

func attrInt(name string, v int64) *protos.AttributeProto {
	return &protos.AttributeProto{Name: name, Type: protos.AttributeProto_INT, I: v}
}

func attrFloat(name string, v float32) *protos.AttributeProto {
	return &protos.AttributeProto{Name: name, Type: protos.AttributeProto_FLOAT, F: v}
}

func attrInts(name string, v ...int64) *protos.AttributeProto {
	return &protos.AttributeProto{Name: name, Type: protos.AttributeProto_INTS, Ints: v}
}

// valueInfo declares a tensor value; dims are fixed sizes or dimension names (string).
func valueInfo(name string, elem protos.TensorProto_DataType, dims ...any) *protos.ValueInfoProto {
	shape := &protos.TensorShapeProto{}
	for _, d := range dims {
		dim := &protos.TensorShapeProto_Dimension{}
		switch v := d.(type) {
		case int:
			dim.Value = &protos.TensorShapeProto_Dimension_DimValue{DimValue: int64(v)}
		case string:
			dim.Value = &protos.TensorShapeProto_Dimension_DimParam{DimParam: v}
		}
		shape.Dim = append(shape.Dim, dim)
	}
	return &protos.ValueInfoProto{Name: name, Type: &protos.TypeProto{Value: &protos.TypeProto_TensorType{
		TensorType: &protos.TypeProto_Tensor{ElemType: int32(elem), Shape: shape}}}}
}

// ONNX returns the serialized ONNX model of tower t of m: BERT with pooling (and
// normalisation) inside the graph, or with m's head the logits and scores.
func ONNX(m *Model, t *Tower) ([]byte, error) {
	cfg := t.BERT
	h, heads := cfg.HiddenSize, cfg.NumAttentionHeads
	dh := h / heads
	b := &graphBuilder{g: &protos.GraphProto{Name: "toolret_bert"}, seen: map[string]bool{}}
	var werr error
	param := func(name string) []float32 {
		if werr != nil {
			return nil
		}
		d, err := variableData(m.Store, t.Base, name)
		if err != nil {
			werr = err
		}
		return d
	}
	// linear adds x·Wᵀ + b for the HF Linear name (weight [out, in], stored transposed).
	linear := func(x, name string, in, out int) string {
		w := param(name + ".weight")
		bias := param(name + ".bias")
		if werr != nil {
			return ""
		}
		wt := make([]float32, in*out)
		for o := 0; o < out; o++ {
			for i := 0; i < in; i++ {
				wt[i*out+o] = w[o*in+i]
			}
		}
		y := b.op("MatMul", []string{x, b.f32(name+".weight_t", wt, in, out)})
		return b.op("Add", []string{y, b.f32(name+".bias", bias, out)})
	}
	layerNorm := func(x, name string) string {
		g := b.f32(name+".weight", param(name+".weight"), h)
		beta := b.f32(name+".bias", param(name+".bias"), h)
		return b.op("LayerNormalization", []string{x, g, beta}, attrInt("axis", -1), attrFloat("epsilon", float32(cfg.LayerNormEps)))
	}

	b.g.Input = []*protos.ValueInfoProto{
		valueInfo(InputIDs, protos.TensorProto_INT64, "batch", "sequence"),
		valueInfo(AttentionMask, protos.TensorProto_INT64, "batch", "sequence"),
		valueInfo(TokenTypeIDs, protos.TensorProto_INT64, "batch", "sequence"),
	}
	one := b.scalarF("one", 1)

	// Embeddings.
	words := b.f32("embeddings.word_embeddings.weight", param("embeddings.word_embeddings.weight"), cfg.VocabSize, h)
	x := b.op("Gather", []string{words, InputIDs}, attrInt("axis", 0))
	shape := b.op("Shape", []string{InputIDs})
	seq := b.op("Gather", []string{shape, b.i64("axis1", []int64{1})}, attrInt("axis", 0))
	posIDs := b.op("Range", []string{b.i64("zero_i64", []int64{0}), seq, b.i64("one_i64", []int64{1})})
	positions := b.f32("embeddings.position_embeddings.weight", param("embeddings.position_embeddings.weight"), cfg.MaxPositionEmbeddings, h)
	x = b.op("Add", []string{x, b.op("Gather", []string{positions, posIDs}, attrInt("axis", 0))})
	types := b.f32("embeddings.token_type_embeddings.weight", param("embeddings.token_type_embeddings.weight"), cfg.TypeVocabSize, h)
	x = b.op("Add", []string{x, b.op("Gather", []string{types, TokenTypeIDs}, attrInt("axis", 0))})
	x = layerNorm(x, "embeddings.LayerNorm")

	// Additive attention mask (1 - mask) * finfo(float32).min, [batch, 1, 1, sequence].
	maskF := b.op("Cast", []string{AttentionMask}, attrInt("to", int64(protos.TensorProto_FLOAT)))
	addMask := b.op("Mul", []string{b.op("Sub", []string{one, maskF}), b.scalarF("lowest", -math.MaxFloat32)})
	addMask = b.op("Unsqueeze", []string{addMask, b.i64("axes12", []int64{1, 2}, 2)})

	splitShape := b.i64("split_heads", []int64{0, 0, int64(heads), int64(dh)}, 4)
	mergeShape := b.i64("merge_heads", []int64{0, 0, int64(h)}, 3)
	scale := b.scalarF("attention_scale", float32(1/math.Sqrt(float64(dh))))
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		heads := func(name string, perm ...int64) string {
			y := b.op("Reshape", []string{linear(x, p+name, h, h), splitShape})
			return b.op("Transpose", []string{y}, attrInts("perm", perm...))
		}
		q := heads("attention.self.query", 0, 2, 1, 3) // [B, heads, S, dh]
		k := heads("attention.self.key", 0, 2, 3, 1)   // [B, heads, dh, S]
		v := heads("attention.self.value", 0, 2, 1, 3) // [B, heads, S, dh]
		scores := b.op("Add", []string{b.op("Mul", []string{b.op("MatMul", []string{q, k}), scale}), addMask})
		probs := b.op("Softmax", []string{scores}, attrInt("axis", -1))
		ctx := b.op("Transpose", []string{b.op("MatMul", []string{probs, v})}, attrInts("perm", 0, 2, 1, 3))
		ctx = b.op("Reshape", []string{ctx, mergeShape})
		a := linear(ctx, p+"attention.output.dense", h, h)
		x = layerNorm(b.op("Add", []string{a, x}), p+"attention.output.LayerNorm")
		inter := linear(x, p+"intermediate.dense", h, cfg.IntermediateSize)
		inter = activation(b, cfg.HiddenAct, inter, l)
		o := linear(inter, p+"output.dense", cfg.IntermediateSize, h)
		x = layerNorm(b.op("Add", []string{o, x}), p+"output.LayerNorm")
	}

	pool := t.Pooling
	if m.Head != nil {
		pool = m.Head.pooling()
	}
	var pooled string
	switch pool {
	case bert.PoolMean:
		m3 := b.op("Unsqueeze", []string{maskF, b.i64("axes2", []int64{2}, 1)})
		axes1 := b.i64("axes1", []int64{1}, 1)
		sum := b.op("ReduceSum", []string{b.op("Mul", []string{x, m3}), axes1}, attrInt("keepdims", 0))
		cnt := b.op("Max", []string{b.op("ReduceSum", []string{m3, axes1}, attrInt("keepdims", 0)), one})
		pooled = b.op("Div", []string{sum, cnt})
	case bert.PoolCLS, bert.PoolPooler:
		pooled = b.op("Gather", []string{x, b.i64("index0", []int64{0})}, attrInt("axis", 1))
		if pool == bert.PoolPooler {
			pooled = b.op("Tanh", []string{linear(pooled, "pooler.dense", h, h)})
		}
	default:
		return nil, fmt.Errorf("export: onnx: pooling %q not supported", pool)
	}
	if werr != nil {
		return nil, werr
	}

	if hd := m.Head; hd != nil {
		n := len(hd.Labels)
		wt := make([]float32, h*n)
		for o := 0; o < n; o++ {
			for i := 0; i < h; i++ {
				wt[i*n+o] = hd.Weight[o*h+i]
			}
		}
		b.op("Add", []string{b.op("MatMul", []string{pooled, b.f32("classifier.weight_t", wt, h, n)}), b.f32("classifier.bias", hd.Bias, n)})
		b.rename(OutLogits)
		b.g.Output = append(b.g.Output, valueInfo(OutLogits, protos.TensorProto_FLOAT, "batch", n))
		if n == 1 {
			b.op("Sigmoid", []string{b.op("Squeeze", []string{OutLogits, b.i64("squeeze1", []int64{1}, 1)})})
			b.rename(OutScore)
			b.g.Output = append(b.g.Output, valueInfo(OutScore, protos.TensorProto_FLOAT, "batch"))
		} else {
			if hd.activation() == "sigmoid" {
				b.op("Sigmoid", []string{OutLogits})
			} else {
				b.op("Softmax", []string{OutLogits}, attrInt("axis", -1))
			}
			b.rename(OutProbs)
			b.g.Output = append(b.g.Output, valueInfo(OutProbs, protos.TensorProto_FLOAT, "batch", n))
		}
	} else {
		if t.Normalize {
			sq := b.op("ReduceSum", []string{b.op("Mul", []string{pooled, pooled}), b.i64("axes_last", []int64{-1}, 1)}, attrInt("keepdims", 1))
			norm := b.op("Sqrt", []string{b.op("Max", []string{sq, b.scalarF("norm_eps2", 1e-24)})})
			b.op("Div", []string{pooled, norm})
		} else {
			b.op("Identity", []string{pooled})
		}
		b.rename(OutEmbedding)
		b.g.Output = []*protos.ValueInfoProto{valueInfo(OutEmbedding, protos.TensorProto_FLOAT, "batch", h)}
	}

	mp := &protos.ModelProto{
		IrVersion:       onnxIRVersion,
		OpsetImport:     []*protos.OperatorSetIdProto{{Domain: "", Version: ONNXOpset}},
		ProducerName:    "toolret",
		ProducerVersion: Version(),
		DocString:       fmt.Sprintf("toolret %s (tower %q, pooling %s, normalize %v)", m.Kind, t.Name, pool, t.Normalize),
		Graph:           b.g,
	}
	out, err := proto.Marshal(mp)
	if err != nil {
		return nil, fmt.Errorf("export: onnx: %w", err)
	}
	return out, nil
}

// activation applies hidden_act: exact erf GELU ("gelu"), the tanh approximation
// ("gelu_new", "gelu_pytorch_tanh") or relu.
func activation(b *graphBuilder, act, x string, layer int) string {
	c := func(name string, v float32) string { return b.scalarF(fmt.Sprintf("%s_%d", name, layer), v) }
	switch act {
	case "relu":
		return b.op("Relu", []string{x})
	case "gelu_new", "gelu_pytorch_tanh":
		// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
		x3 := b.op("Mul", []string{b.op("Mul", []string{x, x}), x})
		inner := b.op("Mul", []string{b.op("Add", []string{x, b.op("Mul", []string{x3, c("gelu_c", 0.044715)})}), c("gelu_s", float32(math.Sqrt(2/math.Pi)))})
		t := b.op("Add", []string{b.op("Tanh", []string{inner}), c("gelu_one", 1)})
		return b.op("Mul", []string{b.op("Mul", []string{x, t}), c("gelu_half", 0.5)})
	}
	// 0.5 x (1 + erf(x / sqrt 2))
	e := b.op("Erf", []string{b.op("Div", []string{x, c("gelu_sqrt2", float32(math.Sqrt2))})})
	return b.op("Mul", []string{b.op("Mul", []string{x, b.op("Add", []string{e, c("gelu_one", 1)})}), c("gelu_half", 0.5)})
}
