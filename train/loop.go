package train

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/gomlx/gomlx/ml/model"
)

// Priority orders the hooks of a loop: lower values run first, and hooks of equal priority
// run in the order they were added (Run's own hooks before Config.Hooks). A hook's default,
// 0, runs after the progress bar and the time limit and before the dev evaluation.
type Priority int

// The priorities of the hooks Run adds.
const (
	PriorityProgress   Priority = -300 // the progress bar's count (its dev line follows the evaluation)
	PriorityTimeLimit  Priority = -200 // Config.MaxTime: makes the step an evaluation point when the time is up
	PriorityEvaluate   Priority = 100  // dev evaluation and best-checkpoint selection (Step.Dev)
	PriorityRecord     Priority = 200  // a line of metrics.jsonl per step; summary.json at the end
	PriorityCheckpoint Priority = 300  // a checkpoint at each evaluation point
	PriorityPlot       Priority = 400  // plot.html at each evaluation point and at the end
	PriorityEarlyStop  Priority = 500  // Config.Patience, then Config.MaxTime's stop
)

// Hook is code the training loop calls at the start of a run, after each optimizer step and
// at its end; any of the functions may be nil. A hook stops the run by returning Stop: the
// loop finishes the step (the hooks after it still run) and ends as a completed run does,
// with the reason in Summary.Stopped. Any other error ends Run with that error, wrapped with
// the hook's name.
type Hook struct {
	// Name names the hook in errors; it must not be empty.
	Name string
	// Priority places the hook among the others (Run's are the Priority constants).
	Priority Priority
	// OnStart is called once before the first step (of this process: a resumed run
	// starts at Loop.Step > 0). A Stop here ends the run before any step.
	OnStart func(l *Loop) error
	// OnStep is called after each optimizer step.
	OnStep func(l *Loop, s *Step) error
	// OnEnd is called once when the run ends without an error (completed or stopped),
	// with its summary (written to summary.json at PriorityRecord); a Stop here is an
	// error.
	OnEnd func(l *Loop, sum *Summary) error
}

// Step is what the hooks see of an optimizer step.
type Step struct {
	Step           int     // optimizer steps done, this one included (from 1)
	Epoch          int     // the epoch of its batches (from 0)
	Loss           float64 // the mean loss of its micro-batches
	LR             float64 // the learning rate it applied
	ExamplesPerSec float64 // examples of its micro-batches per second since the previous step
	// Eval is set at an evaluation point: every Config.EvalEvery steps (0: once per epoch),
	// at the last step and when Config.MaxTime is up. A hook that runs before
	// PriorityEvaluate may set it, and a run stopped before then is evaluated at that step
	// too: after the evaluation hook, Eval says whether the step was evaluated (and so is
	// checkpointed).
	Eval bool
	// Dev holds the dev metrics of an evaluated step, set by the evaluation hook.
	Dev map[string]float64
}

// StopError is the error a hook returns to stop training (see Stop).
type StopError struct {
	Reason string // what Summary.Stopped says
}

func (e *StopError) Error() string { return "train: stop: " + e.Reason }

// Stop returns the error with which a hook stops the run for reason, which becomes
// Summary.Stopped (the first stop of a step, in hook order, gives the reason).
func Stop(reason string) error { return &StopError{Reason: reason} }

// Loop is a training run as its hooks see it: Run builds it, adds its hooks and runs it.
// Hooks read its exported fields and must not change them.
type Loop struct {
	Config Config       // the run's configuration, Optimizer.TotalSteps filled in
	Task   Task         // what is trained
	Store  *model.Store // the model's variables and the optimizer's state
	Start  time.Time    // when Run was called (set-up and compilation count towards MaxTime)
	First  int          // optimizer steps done before this process: 0, or the resumed checkpoint's
	Step   int          // optimizer steps done
	Total  int          // the run's optimizer steps (Config.Epochs, capped at Config.MaxSteps)
	// Epoch and Position are the next micro-batch to train, what a checkpoint records: at an
	// epoch's end they point at the next epoch's start.
	Epoch, Position int

	perEpoch []int // micro-batches of each epoch, rounded down to whole optimizer steps
	acc      int   // micro-batches per optimizer step
	exec     stepper
	hooks    []Hook
	best     best               // the best evaluation so far (checkpointed)
	last     map[string]float64 // the last evaluation's dev metrics
	stopped  string             // why a hook stopped the run ("" while none has)
}

// Best returns the step and dev metrics of the best evaluation so far (the selected
// checkpoint; step -1 before any evaluation).
func (l *Loop) Best() (step int, metrics map[string]float64) { return l.best.Step, l.best.Metrics }

// Stopping returns the reason a hook gave to stop the run, "" while none has.
func (l *Loop) Stopping() string { return l.stopped }

// add registers hooks, keeping the list in priority order (stable: equal priorities keep
// the order in which they were added).
func (l *Loop) add(hooks ...Hook) {
	l.hooks = append(l.hooks, hooks...)
	slices.SortStableFunc(l.hooks, func(a, b Hook) int { return cmp.Compare(a.Priority, b.Priority) })
}

// hookErr handles the error err of the hook h called at when (a phase or a step): a
// StopError stops the run (at the first one's reason) unless stops are not allowed there,
// and any other error is wrapped with the hook's name.
func (l *Loop) hookErr(h Hook, when string, err error, canStop bool) error {
	var stop *StopError
	if canStop && errors.As(err, &stop) {
		if l.stopped == "" {
			l.stopped = stop.Reason
			if l.stopped == "" {
				l.stopped = "stopped by hook " + h.Name
			}
		}
		return nil
	}
	return fmt.Errorf("train: %s: hook %q: %w", when, h.Name, err)
}

// run trains from Step to Total, calling the hooks, and returns the run's summary.
func (l *Loop) run() (*Summary, error) {
	for _, h := range l.hooks {
		if h.OnStart == nil {
			continue
		}
		if err := h.OnStart(l); err != nil {
			if err := l.hookErr(h, "start", err, true); err != nil {
				return nil, err
			}
		}
	}
	lossSum, lossN, examples, tick := 0.0, 0, 0, time.Now()
	for l.stopped == "" && l.Step < l.Total {
		if l.Position >= l.perEpoch[l.Epoch] {
			l.Epoch, l.Position = l.Epoch+1, 0
		}
		inputs, n, err := l.Task.Batch(l.Epoch, l.Position)
		if err != nil {
			return nil, fmt.Errorf("train: epoch %d batch %d: %w", l.Epoch, l.Position, err)
		}
		out, err := l.exec.call(inputs)
		if err != nil {
			return nil, fmt.Errorf("train: step %d: %w", l.Step+1, err)
		}
		l.Position++
		loss := float64(out[0].Value().(float32))
		lr := float64(out[1].Value().(float32))
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return nil, fmt.Errorf("train: loss is %v at step %d (epoch %d, batch %d): stopping; the last good checkpoint is kept in %s", loss, l.Step+1, l.Epoch, l.Position-1, filepath.Join(l.Config.RunDir, "checkpoints"))
		}
		lossSum += loss
		lossN++
		examples += n
		if l.Position%l.acc != 0 {
			continue
		}
		l.Step++
		s := &Step{Step: l.Step, Epoch: l.Epoch, Loss: lossSum / float64(lossN), LR: lr,
			ExamplesPerSec: float64(examples) / time.Since(tick).Seconds(),
			Eval:           l.Step%l.evalEvery() == 0 || l.Step == l.Total}
		if l.Position >= l.perEpoch[l.Epoch] && l.Step < l.Total {
			l.Epoch, l.Position = l.Epoch+1, 0 // where the next step, and a checkpoint, start
		}
		lossSum, lossN, examples, tick = 0, 0, 0, time.Now()
		for _, h := range l.hooks {
			if h.OnStep == nil {
				continue
			}
			if err := h.OnStep(l, s); err != nil {
				if err := l.hookErr(h, fmt.Sprintf("step %d", l.Step), err, true); err != nil {
					return nil, err
				}
			}
		}
	}
	stopped := l.stopped
	if stopped == "" {
		stopped = "completed"
	}
	sum := &Summary{Steps: l.Step, Epochs: l.Epoch + 1, BestStep: l.best.Step, BestMetrics: l.best.Metrics, Final: l.last,
		Seconds: time.Since(l.Start).Seconds(), Stopped: stopped}
	if c, ok := l.exec.(interface{ compileTime() time.Duration }); ok {
		sum.CompileSeconds = c.compileTime().Seconds()
	}
	for _, h := range l.hooks {
		if h.OnEnd == nil {
			continue
		}
		if err := h.OnEnd(l, sum); err != nil {
			return nil, l.hookErr(h, "end", err, false)
		}
	}
	return sum, nil
}

// evalEvery is the number of optimizer steps between periodic evaluations.
func (l *Loop) evalEvery() int {
	if l.Config.EvalEvery > 0 {
		return l.Config.EvalEvery
	}
	return l.perEpoch[0] / l.acc
}
