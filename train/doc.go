// Package train is toolret's trainer, shared by every model kind: AdamW with decoupled weight
// decay (biases and LayerNorm excluded by default), linear warmup then linear or cosine decay,
// global-norm gradient clipping, gradient accumulation, evaluation on a dev split with
// best-checkpoint selection and early stopping, atomic checkpoints with exact resume,
// a progress bar, metrics.jsonl and a plot.
//
// A model kind brings a Task (its loss, batches, dev evaluation and files); Run sets the run
// up and runs a Loop over the task's batches. The loop itself only steps: everything else is
// a Hook it calls at the start, after each optimizer step and at the end, in Priority order.
// Run adds its own hooks (the progress bar, Config.MaxTime, the dev evaluation and
// best-checkpoint selection, metrics.jsonl and summary.json, checkpoints, plot.html and
// Config.Patience) and then Config.Hooks, a Go user's:
//
//	cfg.Hooks = []train.Hook{{
//		Name:     "log dev",
//		Priority: train.PriorityEvaluate + 1, // after the evaluation: Step.Dev is set
//		OnStep: func(l *train.Loop, s *train.Step) error {
//			if s.Eval {
//				log.Printf("step %d/%d: loss %.4f, dev %v", s.Step, l.Total, s.Loss, s.Dev)
//			}
//			return nil
//		},
//	}}
//
// A hook stops the run by returning Stop(reason): the step's other hooks still run (a hook
// that runs before the evaluation, as the default priority 0 does, gets the step evaluated
// and checkpointed, as a last step is), the run ends as a completed one does and its
// Summary.Stopped gives the reason. Early stopping and the time
// limit are such hooks. Any other error ends Run with that error, naming the hook.
package train
