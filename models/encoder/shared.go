package encoder

import (
	"fmt"
	"sync"

	"github.com/gomlx/compute"
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
