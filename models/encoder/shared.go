package encoder

import (
	"fmt"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
)

// Weights shared by every compiled shape. GoMLX embeds a store's variables as constants of
// inference graphs on backends that prefer it (go: PreferConstantsForVariables, and onnx),
// and the go backend then keeps, per compiled graph, its own copy of every weight and of
// every weight matrix prepacked for its matmul kernel: a server compiling a graph per input
// shape (Map's buckets: up to 6 row counts x 10 lengths) held ~130 MB per shape for
// all-MiniLM-L6-v2, 8.2 GB after a load test. Inference graphs therefore register the
// variables as parameters first (VariablesAsParameters), one buffer per variable shared by
// all the graphs, and run under GuardShared.

// sharesWeights says whether a Runner on be feeds the weights as parameters: on every backend
// but onnx, whose GoMLX graphs keep constants (ONNX Runtime prepacks a session's constant
// weights: bench encode measured 56.6 texts/s with constants against 51.2 with parameters,
// at 2.98 GB peak RSS against 0.99). Serving on onnx runs one ONNX Runtime session instead
// (export.NewONNXCall), so those graphs are only a comparison path.
func sharesWeights(be compute.Backend) bool {
	return !backend.RunsONNX(be)
}

// adopt detaches from another backend value (the plain backend that initialised or trained
// them) the variables of the store that are on it, so that the exec's backend can take
// their buffers: a GoMLX tensor serves one backend value. The data is not copied where the
// backend shares host memory.
func (e *SafeExec) adopt() error {
	for v := range e.store.IterVariables() {
		if !v.HasValue() {
			continue
		}
		t, err := v.Value()
		if err != nil {
			return fmt.Errorf("variable %s: %w", v.Path(), err)
		}
		if !t.IsOnAnyDevice() {
			continue
		}
		if b, err := t.Backend(); err == nil && b != e.be {
			if err := t.ToLocal(); err != nil {
				return fmt.Errorf("variable %s: %w", v.Path(), err)
			}
		}
	}
	return nil
}

// VariablesAsParameters makes the variables under scope s that have a value, except those
// under the scopes in except, inputs of g (graph parameters) rather than constants: call it
// in a graph function before the layers read them. GoMLX embeds a variable's value as a
// constant of an inference graph on backends that prefer it (go, onnx), and every compiled
// input shape then holds its own copy of the weights: on onnx, for all-MiniLM-L6-v2, the
// graph's protobuf and its constants' cache keys on the Go heap (~174 MB a shape) and ONNX
// Runtime's copy in its session; a training run's dev evaluation compiled ~8 shapes and
// peaked at 7.3 GB where its training steps took 3.4. With parameters every shape reads the
// store's one buffer per variable. The graph's training flag is set while they are
// registered and restored after, so the layers (dropout) see the graph as it was.
func VariablesAsParameters(s *model.Scope, g *graph.Graph, except ...string) {
	was := s.IsTraining(g)
	s.SetTraining(g, true)
vars:
	for v := range s.IterVariables() {
		if !v.HasValue() {
			continue
		}
		for _, x := range except {
			if p := v.Path(); p == x || strings.HasPrefix(p, strings.TrimSuffix(x, "/")+"/") {
				continue vars
			}
		}
		v.NodeValue(g)
	}
	s.SetTraining(g, was)
}

// GuardShared is Guard for an exec whose graphs read the store's variables as parameters
// (VariablesAsParameters): before a call it takes over for be the variables that another
// backend value holds (another exec's, or the plain backend value that loaded them); a GoMLX
// tensor on a device serves one backend value.
func GuardShared(exec *model.Exec, store *model.Store, be compute.Backend) *SafeExec {
	e := Guard(exec)
	e.store, e.be = store, be
	return e
}
