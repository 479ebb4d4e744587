package export

import (
	"fmt"
	"strings"

	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
	"google.golang.org/protobuf/proto"
)

// ONNX graph constants. The names are those of HF optimum's exports, which transformers.js,
// sentence-transformers' ONNX backend (through optimum) and hugot read.
const (
	ONNXOpset     = 17
	onnxIRVersion = 8
	// ONNXFile is where an HF directory keeps its ONNX model.
	ONNXFile = "onnx/model.onnx"
	// Inputs (int64 [batch_size, sequence_length]).
	InputIDs      = "input_ids"
	AttentionMask = "attention_mask"
	TokenTypeIDs  = "token_type_ids" // only when the encoder has token types
	// Outputs: encoders (bi-encoder towers) give the token states and the sentence embedding,
	// heads their logits (as AutoModelForSequenceClassification exports do).
	OutLastHiddenState   = "last_hidden_state"  // [batch_size, sequence_length, hidden]
	OutSentenceEmbedding = "sentence_embedding" // [batch_size, hidden], pooled (and normalised)
	OutLogits            = "logits"             // [batch_size, labels]
	// Dynamic axis names.
	dimBatch    = "batch_size"
	dimSequence = "sequence_length"
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
		if err := writeQuantized(root, name, b, man.Quantization); err != nil {
			return err
		}
		man.Towers[key] = name
	}
	if err := m.Tok.Save(root); err != nil {
		return fmt.Errorf("export: tokenizer: %w", err)
	}
	return nil
}

// writeTowerONNX adds ONNXFile to the HF directory dir of tower t when its encoder has an
// ONNX graph; otherwise it records in man, once, that the export has none.
func writeTowerONNX(m *Model, t *Tower, dir string, man *Manifest) error {
	if _, ok := t.Encoder.(encoder.ONNX); !ok {
		note := fmt.Sprintf("model_type %s has no ONNX graph yet: no %s (transformers.js and sentence-transformers' ONNX backend cannot load this export)", t.Encoder.ModelType(), ONNXFile)
		for _, n := range man.Notes {
			if n == note {
				return nil
			}
		}
		man.Notes = append(man.Notes, note)
		return nil
	}
	b, err := ONNX(m, t)
	if err != nil {
		return err
	}
	if err := writeFile(dir, ONNXFile, b); err != nil {
		return err
	}
	return writeQuantized(dir, ONNXFile, b, man.Quantization)
}

// writeQuantized writes the fp32 ONNX model b, written as name in dir, quantized as q beside
// it (name with q.Suffix() before .onnx); nothing for fp32.
func writeQuantized(dir, name string, b []byte, q Quantization) error {
	if !q.Int8() {
		return nil
	}
	qb, _, err := QuantizeONNX(b, q)
	if err != nil {
		return fmt.Errorf("export: %s: %w", name, err)
	}
	return writeFile(dir, strings.TrimSuffix(name, ".onnx")+q.Suffix()+".onnx", qb)
}

// ONNX returns the serialized ONNX model of tower t of m, as HF optimum exports the
// corresponding transformers model: inputs input_ids, attention_mask and (when the encoder has
// token types) token_type_ids; for a bi-encoder tower the outputs last_hidden_state and
// sentence_embedding (pooled, and L2-normalised for cosine models, as toolret embeds), for a
// model with a head the head's logits.
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
		onnxgraph.ValueInfo(InputIDs, protos.TensorProto_INT64, dimBatch, dimSequence),
		onnxgraph.ValueInfo(AttentionMask, protos.TensorProto_INT64, dimBatch, dimSequence),
	}
	types := TokenTypeIDs
	if t.Encoder.TypeVocab() > 0 {
		b.Graph.Input = append(b.Graph.Input, onnxgraph.ValueInfo(TokenTypeIDs, protos.TensorProto_INT64, dimBatch, dimSequence))
	} else {
		types = b.Op("Mul", []string{InputIDs, b.I64("zero_types", []int64{0})})
	}
	one := b.ScalarF("one", 1)
	maskF := b.Op("Cast", []string{AttentionMask}, onnxgraph.AttrInt("to", int64(protos.TensorProto_FLOAT)))
	x := enc.ONNX(b, param, InputIDs, types, maskF)
	if m.Head == nil {
		b.Op("Identity", []string{x})
		b.Rename(OutLastHiddenState)
		x = OutLastHiddenState
	}

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
		b.Graph.Output = []*protos.ValueInfoProto{onnxgraph.ValueInfo(OutLogits, protos.TensorProto_FLOAT, dimBatch, n)}
	} else {
		if t.Normalize {
			sq := b.Op("ReduceSum", []string{b.Op("Mul", []string{pooled, pooled}), b.I64("axes_last", []int64{-1}, 1)}, onnxgraph.AttrInt("keepdims", 1))
			norm := b.Op("Sqrt", []string{b.Op("Max", []string{sq, b.ScalarF("norm_eps2", 1e-24)})})
			b.Op("Div", []string{pooled, norm})
		} else {
			b.Op("Identity", []string{pooled})
		}
		b.Rename(OutSentenceEmbedding)
		b.Graph.Output = []*protos.ValueInfoProto{
			onnxgraph.ValueInfo(OutLastHiddenState, protos.TensorProto_FLOAT, dimBatch, dimSequence, h),
			onnxgraph.ValueInfo(OutSentenceEmbedding, protos.TensorProto_FLOAT, dimBatch, h),
		}
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
