// Package onnxgraph assembles ONNX graphs: export writes models with it, and encoders that
// can be exported as ONNX (encoder.ONNX) add their layers with it.
package onnxgraph

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gomlx/compute-onnx/support/protos"
)

// Builder assembles an ONNX graph; every node has one output named after it.
type Builder struct {
	Graph   *protos.GraphProto
	seen    map[string]bool
	scalars map[string]float32
	n       int
}

// New returns a builder for an empty graph.
func New(name string) *Builder {
	return &Builder{Graph: &protos.GraphProto{Name: name}, seen: map[string]bool{}, scalars: map[string]float32{}}
}

func (b *Builder) fresh(prefix string) string {
	b.n++
	return fmt.Sprintf("%s_%d", prefix, b.n)
}

// Op adds a node and returns the name of its output.
func (b *Builder) Op(opType string, inputs []string, attrs ...*protos.AttributeProto) string {
	out := b.fresh(opType)
	b.Graph.Node = append(b.Graph.Node, &protos.NodeProto{Name: out, OpType: opType, Input: inputs, Output: []string{out}, Attribute: attrs})
	return out
}

// Rename makes the last node's output the graph value name.
func (b *Builder) Rename(name string) {
	last := b.Graph.Node[len(b.Graph.Node)-1]
	last.Output[0] = name
}

func (b *Builder) initializer(t *protos.TensorProto) string {
	if b.seen[t.Name] {
		panic("onnxgraph: duplicate initializer " + t.Name) // programming error: names are fixed by the callers
	}
	b.seen[t.Name] = true
	b.Graph.Initializer = append(b.Graph.Initializer, t)
	return t.Name
}

// F32 adds a float32 initializer of shape dims and returns its name.
func (b *Builder) F32(name string, data []float32, dims ...int) string {
	raw := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return b.initializer(&protos.TensorProto{Name: name, DataType: int32(protos.TensorProto_FLOAT), Dims: int64s(dims), RawData: raw})
}

// I64 adds an int64 initializer of shape dims and returns its name.
func (b *Builder) I64(name string, data []int64, dims ...int) string {
	raw := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
	}
	return b.initializer(&protos.TensorProto{Name: name, DataType: int32(protos.TensorProto_INT64), Dims: int64s(dims), RawData: raw})
}

// ScalarF returns the float32 scalar initializer name, adding it on first use; asking for an
// existing name with another value panics (a programming error).
func (b *Builder) ScalarF(name string, v float32) string {
	if old, ok := b.scalars[name]; ok {
		if old != v {
			panic(fmt.Sprintf("onnxgraph: scalar %s is %v, not %v", name, old, v))
		}
		return name
	}
	b.scalars[name] = v
	return b.F32(name, []float32{v})
}

func int64s(d []int) []int64 {
	out := make([]int64, len(d))
	for i, v := range d {
		out[i] = int64(v)
	}
	return out
}

// AttrInt is an integer attribute.
func AttrInt(name string, v int64) *protos.AttributeProto {
	return &protos.AttributeProto{Name: name, Type: protos.AttributeProto_INT, I: v}
}

// AttrFloat is a float attribute.
func AttrFloat(name string, v float32) *protos.AttributeProto {
	return &protos.AttributeProto{Name: name, Type: protos.AttributeProto_FLOAT, F: v}
}

// AttrInts is an integer-list attribute.
func AttrInts(name string, v ...int64) *protos.AttributeProto {
	return &protos.AttributeProto{Name: name, Type: protos.AttributeProto_INTS, Ints: v}
}

// ValueInfo declares a tensor value; dims are fixed sizes (int) or dimension names (string).
func ValueInfo(name string, elem protos.TensorProto_DataType, dims ...any) *protos.ValueInfoProto {
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
