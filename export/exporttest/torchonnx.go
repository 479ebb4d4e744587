package exporttest

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/toolret/toolret/safetensors"
	"google.golang.org/protobuf/proto"
)

// linearWeight matches the Linear weights PyTorch's exporter stores transposed under an
// anonymous name.
var linearWeight = regexp.MustCompile(`(attention\.self\.(query|key|value)|attention\.output\.dense|intermediate\.dense|output\.dense|pooler\.dense)\.weight$`)

// TorchONNXOptions shape the graph TorchONNX writes.
type TorchONNXOptions struct {
	Prefix     string  // tensor name prefix ("bert." as BertForX exports write it)
	HeadSize   int     // the attention scale is sqrt(HeadSize); 0: no attention scale
	MulScale   bool    // scale by Mul(1/sqrt) instead of Div(sqrt)
	Eps        float32 // LayerNorm epsilon; 0: no LayerNorm pattern
	NoErf      bool    // leave out the Erf (another activation)
	Drop       string  // leave out this tensor
	UnnamedAdd string  // this Linear's bias added under an anonymous name
}

// TorchONNX returns the BERT of the HF directory src as PyTorch's ONNX exporter does: biases,
// embeddings and LayerNorm parameters under their names, each Linear weight transposed under
// "onnx::MatMul_N" and multiplied then added to its named bias, the attention scale, LayerNorm
// epsilon and gelu's Erf as nodes. The graph is not meant to run: ImportONNX reads its
// structure and weights.
func TorchONNX(src string, o TorchONNXOptions) ([]byte, error) {
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		return nil, err
	}
	g := &protos.GraphProto{Name: "main_graph"}
	scalar := func(name string, v float32) {
		b := make([]byte, 4)
		binary.LittleEndian.PutUint32(b, math.Float32bits(v))
		g.Node = append(g.Node, &protos.NodeProto{OpType: "Constant", Output: []string{name}, Attribute: []*protos.AttributeProto{{
			Name: "value", Type: protos.AttributeProto_TENSOR, T: &protos.TensorProto{DataType: int32(protos.TensorProto_FLOAT), RawData: b}}}})
	}
	n := 0
	for _, name := range f.Names() {
		if name == o.Drop {
			continue
		}
		raw, info, err := f.Raw(name)
		if err != nil {
			return nil, err
		}
		dims := make([]int64, len(info.Shape))
		for i, d := range info.Shape {
			dims[i] = int64(d)
		}
		if !linearWeight.MatchString(name) {
			g.Initializer = append(g.Initializer, &protos.TensorProto{Name: o.Prefix + name, Dims: dims, DataType: int32(protos.TensorProto_FLOAT), RawData: raw})
			continue
		}
		rows, cols := info.Shape[0], info.Shape[1] // [out, in] -> [in, out]
		tr := make([]byte, len(raw))
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				copy(tr[4*(j*rows+i):], raw[4*(i*cols+j):4*(i*cols+j)+4])
			}
		}
		n++
		w := fmt.Sprintf("onnx::MatMul_%d", 1500+n)
		g.Initializer = append(g.Initializer, &protos.TensorProto{Name: w, Dims: []int64{dims[1], dims[0]}, DataType: int32(protos.TensorProto_FLOAT), RawData: tr})
		bias := o.Prefix + strings.TrimSuffix(name, ".weight") + ".bias"
		if name == o.UnnamedAdd {
			bias = fmt.Sprintf("onnx::Add_%d", 1500+n)
		}
		g.Node = append(g.Node,
			&protos.NodeProto{OpType: "MatMul", Name: fmt.Sprintf("/MatMul_%d", n), Input: []string{fmt.Sprintf("x%d", n), w}, Output: []string{fmt.Sprintf("m%d", n)}},
			&protos.NodeProto{OpType: "Add", Input: []string{bias, fmt.Sprintf("m%d", n)}, Output: []string{fmt.Sprintf("a%d", n)}})
	}
	if o.HeadSize > 0 {
		g.Node = append(g.Node, &protos.NodeProto{OpType: "MatMul", Input: []string{"q", "kt"}, Output: []string{"scores"}})
		if o.MulScale {
			scalar("scale", float32(1/math.Sqrt(float64(o.HeadSize))))
			g.Node = append(g.Node, &protos.NodeProto{OpType: "Mul", Input: []string{"scores", "scale"}, Output: []string{"scaled"}})
		} else {
			scalar("scale", float32(math.Sqrt(float64(o.HeadSize))))
			g.Node = append(g.Node, &protos.NodeProto{OpType: "Div", Input: []string{"scores", "scale"}, Output: []string{"scaled"}})
		}
	}
	if o.Eps > 0 {
		scalar("eps", o.Eps)
		g.Node = append(g.Node,
			&protos.NodeProto{OpType: "ReduceMean", Input: []string{"sq"}, Output: []string{"var"}},
			&protos.NodeProto{OpType: "Add", Input: []string{"var", "eps"}, Output: []string{"vareps"}})
	}
	if !o.NoErf {
		g.Node = append(g.Node, &protos.NodeProto{OpType: "Erf", Input: []string{"h"}, Output: []string{"erf"}})
	}
	return proto.Marshal(&protos.ModelProto{IrVersion: 7, ProducerName: "pytorch", Graph: g,
		OpsetImport: []*protos.OperatorSetIdProto{{Version: 11}}})
}
