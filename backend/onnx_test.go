//go:build onnx

package backend

import (
	"strings"
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

func TestOpenONNXBadOption(t *testing.T) {
	if _, err := Open("onnx"); err != nil {
		t.Skip(err)
	}
	_, err := Open("onnx:cpu,no_such_option=1")
	if err == nil {
		t.Fatal("an unknown ONNX Runtime option opened")
	}
	msg := err.Error()
	if !strings.Contains(msg, "no_such_option") || !strings.Contains(msg, "check the options") || strings.Contains(msg, "-tags") {
		t.Errorf("error should name the option and not speak of build tags: %v", err)
	}
}
