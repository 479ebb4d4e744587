package train

import (
	"bufio"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/internal/progress"
	"github.com/toolret/toolret/rundir"
)

// The hooks Run adds to its loop, in the order they run at a step.

// progressHooks show a progress bar of the steps, with the last step's loss and rate, a line
// per dev evaluation, and finish it at the end.
func progressHooks(p *progressBar) []Hook {
	return []Hook{
		{Name: "progress", Priority: PriorityProgress,
			OnStart: func(l *Loop) error {
				p.bar = progress.New("step", l.Config.Quiet, func() string { return fmt.Sprintf("loss %.4f %.1f ex/s", p.loss, p.rate) })
				p.bar.Update(l.Step, l.Total) // a resumed run's steps done before do not count in the ETA
				return nil
			},
			OnStep: func(l *Loop, s *Step) error {
				p.loss, p.rate = s.Loss, s.ExamplesPerSec
				p.bar.Update(s.Step, l.Total)
				return nil
			},
			OnEnd: func(*Loop, *Summary) error { p.bar.Finish(); return nil },
		},
		{Name: "progress", Priority: PriorityEvaluate, // after the evaluation (added after it)
			OnStep: func(l *Loop, s *Step) error {
				if s.Eval {
					m, b := l.Config.Metric, l.best
					p.bar.Note(fmt.Sprintf("step %d dev %s %.2f (best %.2f at %d)", s.Step, m, s.Dev[m], b.Metrics[m], b.Step))
				}
				return nil
			},
		},
	}
}

// progressBar is the state of progressHooks.
type progressBar struct {
	bar        *progress.Bar
	loss, rate float64 // the last step's, shown after the count
}

// evaluateHook evaluates the model on the dev split at evaluation points (and at the step a
// hook stopped the run before it) and keeps the best evaluation by Config.Metric (the last
// one when it is ""), counting the evaluations without improvement.
func evaluateHook() Hook {
	return Hook{Name: "evaluate", Priority: PriorityEvaluate,
		OnStep: func(l *Loop, s *Step) error {
			if !s.Eval && l.stopped == "" {
				return nil
			}
			s.Eval = true
			metrics, err := l.Task.Evaluate(l.Store)
			if err != nil {
				return fmt.Errorf("evaluation: %w", err)
			}
			m := l.Config.Metric
			if _, ok := metrics[m]; m != "" && !ok {
				return fmt.Errorf("-metric %q is not a dev metric this model reports (have %s)", m, strings.Join(sortedKeys(metrics), ", "))
			}
			s.Dev, l.last = metrics, metrics
			if m == "" || l.best.Step < 0 || metrics[m] > l.best.Metrics[m] {
				l.best = best{Step: s.Step, Metrics: metrics}
			} else {
				l.best.Bad++
			}
			return nil
		},
	}
}

// recordHook appends a line per step to RUN/metrics.jsonl (its loss, learning rate, rate and
// dev metrics), flushed at once so that a killed run keeps its steps, and writes
// RUN/summary.json at the end.
func recordHook(w *bufio.Writer, name string) Hook {
	return Hook{Name: "record", Priority: PriorityRecord,
		OnStep: func(l *Loop, s *Step) error {
			rec := map[string]any{"step": s.Step, "epoch": s.Epoch, "loss": s.Loss, "lr": s.LR, "examples_per_sec": s.ExamplesPerSec}
			for k, v := range s.Dev {
				rec["dev_"+k] = v
			}
			line, err := json.Marshal(rec)
			if err != nil {
				return fmt.Errorf("metrics record: %w", err)
			}
			w.Write(append(line, '\n'))
			if err := w.Flush(); err != nil {
				return fmt.Errorf("write %s: %w", name, err)
			}
			return nil
		},
		OnEnd: func(l *Loop, sum *Summary) error { return rundir.WriteJSON(l.Config.RunDir, "summary.json", sum) },
	}
}

// checkpointHook saves a checkpoint (atomically, with files) at each evaluated step and
// prunes the older ones but Config.KeepLast and the best.
func checkpointHook(files map[string][]byte) Hook {
	return Hook{Name: "checkpoint", Priority: PriorityCheckpoint,
		OnStep: func(l *Loop, s *Step) error {
			if !s.Eval {
				return nil
			}
			c := l.Config
			m := checkpoints.Manifest{Step: l.Step, Epoch: l.Epoch, Position: l.Position, Seed: c.Seed, Fingerprint: c.Fingerprint,
				Metrics: l.last, Extra: map[string]any{"best": l.best}}
			if _, err := checkpoints.Save(c.RunDir, l.Store, m, files); err != nil {
				return err
			}
			var protect []int
			if l.best.Step >= 0 {
				protect = append(protect, l.best.Step)
			}
			return checkpoints.Prune(c.RunDir, max(c.KeepLast, 1), protect...)
		},
	}
}

// plotHook renders RUN/plot.html at each evaluated step and at the end, when it says where.
func plotHook() Hook {
	return Hook{Name: "plot", Priority: PriorityPlot,
		OnStep: func(l *Loop, s *Step) error {
			if !s.Eval {
				return nil
			}
			return writePlot(l.Config.RunDir)
		},
		OnEnd: func(l *Loop, _ *Summary) error {
			if err := writePlot(l.Config.RunDir); err != nil {
				return err
			}
			fmt.Fprintf(msgs, "plot: %s\n", filepath.Join(l.Config.RunDir, PlotFile))
			return nil
		},
	}
}

// earlyStopHook stops the run after Config.Patience evaluations without improvement.
func earlyStopHook() Hook {
	return Hook{Name: "early-stop", Priority: PriorityEarlyStop,
		OnStep: func(l *Loop, s *Step) error {
			if s.Eval && l.best.Bad >= l.Config.Patience {
				return Stop(fmt.Sprintf("early stopping: %d evaluations without improvement", l.best.Bad))
			}
			return nil
		},
	}
}

// timeLimitHooks stop the run at the first step that ends Config.MaxTime after Run began,
// evaluated and checkpointed: the first hook makes the step an evaluation point, the second
// stops the run after the checkpoint (and after early stopping, whose reason comes first).
func timeLimitHooks() []Hook {
	var up bool
	return []Hook{
		{Name: "max-time", Priority: PriorityTimeLimit,
			OnStep: func(l *Loop, s *Step) error {
				up = time.Since(l.Start) >= l.Config.MaxTime
				if up {
					s.Eval = true
				}
				return nil
			},
		},
		{Name: "max-time", Priority: PriorityEarlyStop,
			OnStep: func(l *Loop, s *Step) error {
				if up && s.Step < l.Total {
					return Stop(fmt.Sprintf("time limit: -max-time %v reached at step %d of %d", l.Config.MaxTime, s.Step, l.Total))
				}
				return nil
			},
		},
	}
}

// stopAfterHook ends the run with ErrStopped after Config.StopAfter steps, as if it had been
// killed there (unless a hook stopped it at that step).
func stopAfterHook(p *progressBar) Hook {
	return Hook{Name: "stop-after", Priority: PriorityEarlyStop + 1,
		OnStep: func(l *Loop, s *Step) error {
			if l.stopped == "" && s.Step >= l.Config.StopAfter {
				p.bar.Finish()
				return ErrStopped
			}
			return nil
		},
	}
}
