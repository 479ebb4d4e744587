package train

import (
	"fmt"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/core/tensors/dtensor"
	"github.com/gomlx/gomlx/ml/model"
)

// MeshAxis names the one axis of the device mesh a step's batch is split along.
const MeshAxis = "data"

// CheckDevices returns an error unless be has at least n devices (n <= 1 always passes). The
// error names the count found and how to get more.
func CheckDevices(be compute.Backend, n int) error {
	if n < 0 {
		return fmt.Errorf("-devices %d: must be >= 0", n)
	}
	if n <= 1 {
		return nil
	}
	have := be.NumDevices()
	if n <= have {
		return nil
	}
	hint := ": several devices need -backend xla:cpu or xla:cuda (a binary built with -tags xla)"
	if desc := be.Description(); be.String() == "xla" {
		hint = ": XLA's CUDA plugin uses every GPU the machine lets it see"
		if strings.Contains(desc, "cpu") {
			hint = ": ask XLA's CPU plugin for more host devices with -backend xla:cpu,devices=N"
		}
	}
	return fmt.Errorf("-devices %d: backend %s has %d device(s)%s", n, be.String(), have, hint)
}

// stepExec runs the compiled training step fn on one device or, with n > 1, SPMD over n
// devices of be: the graph is the one of the whole (global) batch, whose inputs are split along
// their first axis over a one-axis mesh and whose variables are replicated; XLA's Shardy
// partitioner (GoMLX's AutoSharding strategy, as ml/train.Trainer.DistributedTrainStep uses)
// partitions it, so each device computes on its share of the batch and the gradients of the
// replicated weights are summed across devices (all-reduce) into the gradient of the global
// batch's loss: the step equals the one-device step on the same batch, up to float rounding.
// An input whose first axis does not divide by n (a short last batch) is given whole to every
// device; such a step is still exact, just not split.
type stepExec struct {
	be       compute.Backend
	store    *model.Store
	fn       func(s *model.Scope, inputs []*Node) []*Node
	n        int
	maxCache int
	mesh     *distributed.DeviceMesh
	execs    map[string]*model.Exec // by the inputs' split pattern
	shapes   map[string]bool        // the input shapes compiled (stepKey)
	compile  time.Duration          // spent compiling them (compileTime)
}

// stepKey names the split pattern and shapes of a step's inputs.
func stepKey(split string, inputs []*tensors.Tensor) string {
	var b strings.Builder
	b.WriteString(split)
	for _, t := range inputs {
		b.WriteString(" " + t.Shape().String())
	}
	return b.String()
}

// compileTime is the time spent compiling the step for new input shapes: the compilation
// alone on one device; with several, the first call of each shape (its compilation and one
// step), as the sharded executable compiles on its first call.
func (e *stepExec) compileTime() time.Duration { return e.compile }

func newStepExec(be compute.Backend, store *model.Store, n int, fn func(s *model.Scope, inputs []*Node) []*Node) (*stepExec, error) {
	if err := CheckDevices(be, n); err != nil {
		return nil, err
	}
	e := &stepExec{be: be, store: store, fn: fn, n: max(n, 1), execs: map[string]*model.Exec{}}
	if e.n > 1 {
		mesh, err := distributed.NewDeviceMesh([]int{e.n}, []string{MeshAxis})
		if err != nil {
			return nil, fmt.Errorf("train: device mesh of %d: %w", e.n, err)
		}
		e.mesh = mesh
	}
	return e, nil
}

// setMaxCache sets the number of compiled steps (input shapes) each executable caches.
func (e *stepExec) setMaxCache(n int) {
	e.maxCache = n
	for _, x := range e.execs {
		x.SetMaxCache(n)
	}
}

// call runs one step on inputs (the global batch) and returns fn's outputs.
func (e *stepExec) call(inputs []*tensors.Tensor) ([]*tensors.Tensor, error) {
	split := make([]bool, len(inputs))
	key := make([]byte, len(inputs))
	for i, t := range inputs {
		split[i] = e.n > 1 && t.Rank() >= 1 && t.Shape().Dimensions[0]%e.n == 0
		key[i] = '0'
		if split[i] {
			key[i] = '1'
		}
	}
	x, ok := e.execs[string(key)]
	if !ok {
		var err error
		if x, err = e.newExec(split); err != nil {
			return nil, err
		}
		e.execs[string(key)] = x
	}
	args := make([]any, len(inputs))
	for i, t := range inputs {
		args[i] = t
	}
	sk := stepKey(string(key), inputs)
	if !e.shapes[sk] {
		if e.shapes == nil {
			e.shapes = map[string]bool{}
		}
		e.shapes[sk] = true
		start := time.Now()
		if e.n <= 1 {
			in := make([]shapes.Shape, len(inputs))
			for i, t := range inputs {
				in[i] = t.Shape()
			}
			if _, err := x.Compile(in...); err != nil {
				return nil, err
			}
			e.compile += time.Since(start)
		} else {
			defer func() { e.compile += time.Since(start) }()
		}
	}
	if e.n > 1 {
		for i, t := range inputs {
			d, err := dtensor.ShardTensor(e.spec(split[i]), t)
			if err != nil {
				return nil, fmt.Errorf("train: split input %d %s over %d devices: %w", i, t.Shape(), e.n, err)
			}
			args[i] = d
		}
	}
	return x.Call(args...)
}

func (e *stepExec) spec(split bool) *distributed.ShardingSpec {
	if !split {
		return distributed.NewReplicatedShardingSpec(e.mesh)
	}
	s, err := distributed.BuildSpec(e.mesh).S(MeshAxis).Done()
	if err != nil { // cannot happen: the mesh has the axis
		panic(err)
	}
	return s
}

func (e *stepExec) newExec(split []bool) (*model.Exec, error) {
	x, err := model.NewExec(e.be, e.store, e.fn)
	if err != nil {
		return nil, err
	}
	if e.maxCache > 0 {
		x.SetMaxCache(e.maxCache)
	}
	if e.n > 1 {
		specs := make([]*distributed.ShardingSpec, len(split))
		for i, s := range split {
			specs[i] = e.spec(s)
		}
		x.AutoSharding(e.mesh).WithInputShardingSpecs(specs...).
			WithOutputShardingSpecs(distributed.NewReplicatedShardingSpec(e.mesh))
	}
	return x, nil
}
