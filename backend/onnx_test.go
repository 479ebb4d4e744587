//go:build onnx

package backend

import (
	"testing"

	"github.com/gomlx/gomlx/core/graph"
)

func TestOpenONNX(t *testing.T) {
	b, err := Open("onnx")
	if err != nil {
		t.Skip(err)
	}
	out := graph.MustExecOnce(b, func(x *graph.Node) *graph.Node { return graph.Add(x, x) }, float32(2))
	if got := out.Value().(float32); got != 4 {
		t.Fatalf("2+2 = %v", got)
	}
}
