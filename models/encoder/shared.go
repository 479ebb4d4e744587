package encoder

import (
	"fmt"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Weights shared by every compiled shape. GoMLX embeds a store's variables as constants of
// inference graphs on backends that prefer it (the go backend: PreferConstantsForVariables),
// and the go backend then keeps, per compiled graph, its own copy of every weight and of
// every weight matrix prepacked for its matmul kernel: a server compiling a graph per input
// shape (Map's buckets: up to 6 row counts x 10 lengths) held ~130 MB per shape for
// all-MiniLM-L6-v2, 8.2 GB after a load test. NewSharedExec instead feeds the variables as
// parameters, one buffer per variable shared by all the graphs.

// paramsBackend is a backend that asks GoMLX for variables as graph parameters.
type paramsBackend struct{ compute.Backend }

func (b paramsBackend) Capabilities() compute.Capabilities {
	c := b.Backend.Capabilities().Clone()
	c.PreferConstantsForVariables = false
	return c
}

var (
	paramsMu sync.Mutex
	paramsBE = map[compute.Backend]compute.Backend{}
)

// paramsFor returns the one parameters-preferring view of the go backend be (one per
// backend value, since a GoMLX tensor on a device belongs to one backend value), and any
// other backend unchanged: onnx also prefers constants, and ONNX Runtime prepacks constant
// weights of its sessions (not measured with parameters; left as it was).
func paramsFor(be compute.Backend) compute.Backend {
	if be.String() != "go" || !be.Capabilities().PreferConstantsForVariables {
		return be
	}
	paramsMu.Lock()
	defer paramsMu.Unlock()
	w := paramsBE[be]
	if w == nil {
		w = paramsBackend{be}
		paramsBE[be] = w
	}
	return w
}

// NewSharedExec is model.NewExec for inference (guarded as Guard does) with the store's
// variables fed as parameters of every compiled graph instead of constants baked into each:
// one copy of the weights however many input shapes the exec compiles. On backends
// other than go it is Guard(model.NewExec(be, store, fn)).
func NewSharedExec[F model.ExecGraphFn](be compute.Backend, store *model.Store, fn F) (*SafeExec, error) {
	pbe := paramsFor(be)
	exec, err := model.NewExec(pbe, store, fn)
	if err != nil {
		return nil, err
	}
	e := Guard(exec)
	if pbe != be {
		e.store, e.be = store, pbe
	}
	return e, nil
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
// backend value holds (a NewSharedExec's runner over the same store), as NewSharedExec's
// execs do; a GoMLX tensor on a device serves one backend value.
func GuardShared(exec *model.Exec, store *model.Store, be compute.Backend) *SafeExec {
	e := Guard(exec)
	e.store, e.be = store, be
	return e
}
