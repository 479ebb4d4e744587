package backend

import (
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
)

func TestConfig(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "go:ops_sequential"}, {"go", "go:ops_sequential"}, {"onnx", "onnx:cpu"},
		{"xla", "xla:cpu"}, {"xla:cuda", "xla:cuda"}, {"go:parallelism=2", "go:parallelism=2"},
	} {
		if got := Config(tc.in); got != tc.want {
			t.Errorf("Config(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestOpenGo(t *testing.T) {
	b, err := Open("go")
	if err != nil {
		t.Fatal(err)
	}
	out := graph.MustExecOnce(b, func(x *graph.Node) *graph.Node { return graph.Add(x, x) }, float32(2))
	if got := out.Value().(float32); got != 4 {
		t.Fatalf("2+2 = %v", got)
	}
	b2, _ := Open("go")
	if b != b2 {
		t.Error("Open should share one backend per config")
	}
}

func TestOpenUnknown(t *testing.T) {
	_, err := Open("tpu-from-mars")
	if err == nil || !strings.Contains(err.Error(), "unknown backend kind") {
		t.Fatalf("want unknown-backend error, got %v", err)
	}
}
