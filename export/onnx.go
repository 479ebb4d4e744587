package export

import (
	"fmt"

	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
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

// ONNX returns the serialized ONNX model of tower t of m: the encoder with pooling (and
// normalisation) inside the graph, or with m's head the logits and scores.
func ONNX(m *Model, t *Tower) ([]byte, error) {
	enc, ok := t.Encoder.(encoder.ONNX)
	if !ok {
		return nil, fmt.Errorf("export: onnx: model_type %q cannot be written as ONNX", t.Encoder.ModelType())
	}
	h := t.Encoder.Hidden()
	b := onnxgraph.New("toolret_" + t.Encoder.ModelType())
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

	b.Graph.Input = []*protos.ValueInfoProto{
		onnxgraph.ValueInfo(InputIDs, protos.TensorProto_INT64, "batch", "sequence"),
		onnxgraph.ValueInfo(AttentionMask, protos.TensorProto_INT64, "batch", "sequence"),
		onnxgraph.ValueInfo(TokenTypeIDs, protos.TensorProto_INT64, "batch", "sequence"),
	}
	one := b.ScalarF("one", 1)
	maskF := b.Op("Cast", []string{AttentionMask}, onnxgraph.AttrInt("to", int64(protos.TensorProto_FLOAT)))
	x := enc.ONNX(b, param, InputIDs, TokenTypeIDs, maskF)

	pool := t.Pooling
	if m.Head != nil {
		pool = m.Head.pooling()
	}
	var pooled string
	switch pool {
	case encoder.PoolMean:
		m3 := b.Op("Unsqueeze", []string{maskF, b.I64("axes2", []int64{2}, 1)})
		axes1 := b.I64("axes1", []int64{1}, 1)
		sum := b.Op("ReduceSum", []string{b.Op("Mul", []string{x, m3}), axes1}, onnxgraph.AttrInt("keepdims", 0))
		cnt := b.Op("Max", []string{b.Op("ReduceSum", []string{m3, axes1}, onnxgraph.AttrInt("keepdims", 0)), one})
		pooled = b.Op("Div", []string{sum, cnt})
	case encoder.PoolCLS, encoder.PoolPooler:
		pooled = b.Op("Gather", []string{x, b.I64("index0", []int64{0})}, onnxgraph.AttrInt("axis", 1))
		if pool == encoder.PoolPooler {
			pooled = enc.ONNXPooler(b, param, pooled)
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
		b.Op("Add", []string{b.Op("MatMul", []string{pooled, b.F32("classifier.weight_t", wt, h, n)}), b.F32("classifier.bias", hd.Bias, n)})
		b.Rename(OutLogits)
		b.Graph.Output = append(b.Graph.Output, onnxgraph.ValueInfo(OutLogits, protos.TensorProto_FLOAT, "batch", n))
		if n == 1 {
			b.Op("Sigmoid", []string{b.Op("Squeeze", []string{OutLogits, b.I64("squeeze1", []int64{1}, 1)})})
			b.Rename(OutScore)
			b.Graph.Output = append(b.Graph.Output, onnxgraph.ValueInfo(OutScore, protos.TensorProto_FLOAT, "batch"))
		} else {
			if hd.activation() == "sigmoid" {
				b.Op("Sigmoid", []string{OutLogits})
			} else {
				b.Op("Softmax", []string{OutLogits}, onnxgraph.AttrInt("axis", -1))
			}
			b.Rename(OutProbs)
			b.Graph.Output = append(b.Graph.Output, onnxgraph.ValueInfo(OutProbs, protos.TensorProto_FLOAT, "batch", n))
		}
	} else {
		if t.Normalize {
			sq := b.Op("ReduceSum", []string{b.Op("Mul", []string{pooled, pooled}), b.I64("axes_last", []int64{-1}, 1)}, onnxgraph.AttrInt("keepdims", 1))
			norm := b.Op("Sqrt", []string{b.Op("Max", []string{sq, b.ScalarF("norm_eps2", 1e-24)})})
			b.Op("Div", []string{pooled, norm})
		} else {
			b.Op("Identity", []string{pooled})
		}
		b.Rename(OutEmbedding)
		b.Graph.Output = []*protos.ValueInfoProto{onnxgraph.ValueInfo(OutEmbedding, protos.TensorProto_FLOAT, "batch", h)}
	}

	mp := &protos.ModelProto{
		IrVersion:       onnxIRVersion,
		OpsetImport:     []*protos.OperatorSetIdProto{{Domain: "", Version: ONNXOpset}},
		ProducerName:    "toolret",
		ProducerVersion: Version(),
		DocString:       fmt.Sprintf("toolret %s (tower %q, pooling %s, normalize %v)", m.Kind, t.Name, pool, t.Normalize),
		Graph:           b.Graph,
	}
	out, err := proto.Marshal(mp)
	if err != nil {
		return nil, fmt.Errorf("export: onnx: %w", err)
	}
	return out, nil
}
