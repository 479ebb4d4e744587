package benchcmd

import (
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/train"
)

// newStepExec returns a function running one training step of task (batch i of epoch).
func newStepExec(be compute.Backend, store *model.Store, task train.Task, opt train.Optimizer) (func(epoch, i int) error, error) {
	exec, err := model.NewExec(be, store, func(s *model.Scope, in []*Node) *Node {
		s.SetTraining(in[0].Graph(), true)
		loss := task.Loss(s, in)
		opt.Update(s, loss)
		return loss
	})
	if err != nil {
		return nil, err
	}
	return func(epoch, i int) error {
		in, _, err := task.Batch(epoch, i)
		if err != nil {
			return err
		}
		args := make([]any, len(in))
		for k, t := range in {
			args[k] = t
		}
		_, err = exec.Call(args...)
		return err
	}, nil
}
