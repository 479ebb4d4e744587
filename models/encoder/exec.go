package encoder

import (
	"strings"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// build serialises graph building: a model.Exec compiles a graph the first time it sees an
// input shape, and building touches the store's variables (GoMLX's Store.VariableWithShape
// sets their initializer), so two first calls on new shapes must not run at once. Calls on
// shapes already compiled run concurrently.
var build sync.Mutex

// SafeExec is a model.Exec that is safe for concurrent calls with varying shapes (a server
// embedding queries of different length buckets at once).
type SafeExec struct {
	exec *model.Exec
	mu   sync.Mutex
	seen map[string]bool
	// store and be are set by GuardShared: the variables are graph parameters on be.
	store *model.Store
	be    compute.Backend
}

// Guard wraps e, lifting GoMLX's default limit of 32 compiled graphs per Exec (an error on
// the 33rd shape): inference shapes are bounded by Map's buckets (rows and lengths), which a
// server embedding batches of every size exceeds.
func Guard(e *model.Exec) *SafeExec {
	e.SetMaxCache(-1)
	return &SafeExec{exec: e, seen: map[string]bool{}}
}

// Call1 runs the graph on tensors, compiling it for their shapes first if needed.
func (e *SafeExec) Call1(args ...*tensors.Tensor) (*tensors.Tensor, error) {
	var b strings.Builder
	in := make([]any, len(args))
	for i, t := range args {
		b.WriteString(t.Shape().String())
		b.WriteByte(';')
		in[i] = t
	}
	key := b.String()
	e.mu.Lock()
	known := e.seen[key]
	e.mu.Unlock()
	if known {
		if e.store != nil {
			if err := e.adopt(); err != nil {
				return nil, err
			}
		}
		return e.exec.Call1(in...)
	}
	build.Lock()
	defer build.Unlock()
	if e.store != nil {
		if err := e.adopt(); err != nil {
			return nil, err
		}
	}
	out, err := e.exec.Call1(in...)
	if err != nil && e.store != nil {
		// The first call initialised missing variables (GoMLX's initialisers run on the
		// plain backend): take them over and run again.
		if aerr := e.adopt(); aerr != nil {
			return nil, aerr
		}
		out, err = e.exec.Call1(in...)
	}
	if err == nil {
		e.mu.Lock()
		e.seen[key] = true
		e.mu.Unlock()
	}
	return out, err
}
