package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
)

// records reads RUN/metrics.jsonl.
func records(t *testing.T, dir string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}

// stopAt returns a hook that stops the run at step n.
func stopAt(name string, p Priority, n int) Hook {
	return Hook{Name: name, Priority: p, OnStep: func(_ *Loop, s *Step) error {
		if s.Step == n {
			return Stop(fmt.Sprintf("%d steps are enough", n))
		}
		return nil
	}}
}

// TestHooks runs the toy task (3 epochs of 8 steps, evaluated every 4) with a user's hooks:
// counting steps, stopping the run before or after the evaluation, at the start, failing.
func TestHooks(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	var calls []string // what the hooks saw, in order
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		hooks   []Hook
		wantErr string // an error containing this, else a summary
		steps   int
		stopped string
		ckpts   []int    // the checkpoints kept at the end (KeepLast 2 and the best)
		calls   []string // nil: not checked
	}{
		{
			name: "count steps",
			hooks: []Hook{{Name: "count",
				OnStart: func(l *Loop) error { calls = append(calls, fmt.Sprintf("start %d/%d", l.Step, l.Total)); return nil },
				OnStep: func(l *Loop, s *Step) error {
					if s.Eval {
						calls = append(calls, fmt.Sprintf("eval %d", s.Step))
					}
					return nil
				},
				OnEnd: func(l *Loop, sum *Summary) error {
					calls = append(calls, fmt.Sprintf("end %d %s", sum.Steps, sum.Stopped))
					return nil
				},
			}},
			steps: 24, stopped: "completed", ckpts: []int{4, 20, 24}, // the best, 4, is kept
			calls: []string{"start 0/24", "eval 4", "eval 8", "eval 12", "eval 16", "eval 20", "eval 24", "end 24 completed"},
		},
		{
			name:  "stop before evaluation",
			hooks: []Hook{stopAt("stop", 0, 6)},
			steps: 6, stopped: "6 steps are enough", ckpts: []int{4, 6},
		},
		{
			name:  "stop after evaluation",
			hooks: []Hook{stopAt("stop", PriorityEvaluate+1, 6)},
			steps: 6, stopped: "6 steps are enough", ckpts: []int{4},
		},
		{
			name:  "first stop gives the reason",
			hooks: []Hook{stopAt("late", 1, 6), stopAt("early", -1, 6)},
			steps: 6, stopped: "6 steps are enough", ckpts: []int{4, 6},
		},
		{
			name: "stop at start",
			hooks: []Hook{{Name: "refuse", OnStart: func(*Loop) error {
				return Stop("not today")
			}}},
			steps: 0, stopped: "not today", ckpts: nil,
		},
		{
			name: "order by priority",
			hooks: []Hook{
				{Name: "after checkpoint", Priority: PriorityCheckpoint + 1, OnStep: func(l *Loop, s *Step) error {
					if s.Eval {
						_, err := os.Stat(checkpoints.Dir(l.Config.RunDir, s.Step))
						calls = append(calls, fmt.Sprintf("checkpoint %d saved: %v", s.Step, err == nil))
					}
					return nil
				}},
				{Name: "after evaluation", Priority: PriorityEvaluate + 1, OnStep: func(l *Loop, s *Step) error {
					if s.Eval {
						best, _ := l.Best()
						calls = append(calls, fmt.Sprintf("dev %d: %d metric, best %d", s.Step, len(s.Dev), best))
					}
					return nil
				}},
				{Name: "before evaluation", Priority: -1, OnStep: func(l *Loop, s *Step) error {
					if s.Step == 2 {
						s.Eval = true // evaluate here too
					}
					if s.Eval {
						calls = append(calls, fmt.Sprintf("dev %d: %d metrics before", s.Step, len(s.Dev)))
					}
					if s.Step == 4 {
						return Stop("enough")
					}
					return nil
				}},
			},
			steps: 4, stopped: "enough", ckpts: []int{2, 4},
			calls: []string{
				"dev 2: 0 metrics before", "dev 2: 1 metric, best 2", "checkpoint 2 saved: true",
				"dev 4: 0 metrics before", "dev 4: 1 metric, best 2", "checkpoint 4 saved: true",
			},
		},
		{
			name:    "error names the hook",
			hooks:   []Hook{{Name: "boom", OnStep: func(_ *Loop, s *Step) error { return boom }}},
			wantErr: `train: step 1: hook "boom": boom`,
		},
		{
			name:    "stop at the end is an error",
			hooks:   []Hook{{Name: "late", OnEnd: func(*Loop, *Summary) error { return Stop("too late") }}},
			wantErr: `train: end: hook "late": train: stop: too late`,
		},
		{
			name:    "unnamed hook",
			hooks:   []Hook{{OnStep: func(*Loop, *Step) error { return nil }}},
			wantErr: "train: hook 1 of 1 has no name",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls = nil
			dir := filepath.Join(t.TempDir(), "run")
			cfg := toyConfig(dir)
			cfg.Hooks = tc.hooks
			sum, err := Run(be, newToyStore(), &toyTask{seed: 1, batches: 8}, cfg, false)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error containing %q, got %v", tc.wantErr, err)
				}
				if tc.wantErr == `train: step 1: hook "boom": boom` && !errors.Is(err, boom) {
					t.Errorf("%v does not wrap the hook's error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sum.Steps != tc.steps || sum.Stopped != tc.stopped {
				t.Errorf("summary: %d steps, stopped %q; want %d, %q", sum.Steps, sum.Stopped, tc.steps, tc.stopped)
			}
			var onDisk Summary
			if b, err := os.ReadFile(filepath.Join(dir, "summary.json")); err != nil || json.Unmarshal(b, &onDisk) != nil || onDisk.Stopped != tc.stopped {
				t.Errorf("summary.json says stopped %q (%v), want %q", onDisk.Stopped, err, tc.stopped)
			}
			if recs := records(t, dir); len(recs) != tc.steps {
				t.Errorf("metrics.jsonl has %d records, want %d", len(recs), tc.steps)
			}
			if got, err := checkpoints.List(dir); err != nil || !slices.Equal(got, tc.ckpts) {
				t.Errorf("checkpoints %v (%v), want %v", got, err, tc.ckpts)
			}
			if tc.calls != nil && !slices.Equal(calls, tc.calls) {
				t.Errorf("hooks saw\n  %s\nwant\n  %s", strings.Join(calls, "\n  "), strings.Join(tc.calls, "\n  "))
			}
		})
	}
}

// TestHookStopResumes: a run a hook stopped before its evaluation is checkpointed at that
// step, and resumed without the hook it ends with the weights and metrics of a run never
// stopped.
func TestHookStopResumes(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	task := &toyTask{seed: 5, batches: 10}
	refDir := filepath.Join(t.TempDir(), "ref")
	ref := newToyStore()
	if _, err := Run(be, ref, task, toyConfig(refDir), false); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	cfg := toyConfig(dir)
	cfg.Hooks = []Hook{stopAt("stop", 0, 7)}
	sum, err := Run(be, newToyStore(), task, cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 7 || sum.Stopped != "7 steps are enough" {
		t.Fatalf("summary: %d steps, stopped %q", sum.Steps, sum.Stopped)
	}
	cfg.Hooks = nil
	resumed := model.NewStore()
	if sum, err = Run(be, resumed, task, cfg, true); err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 30 || sum.Stopped != "completed" {
		t.Fatalf("resumed summary: %d steps, stopped %q", sum.Steps, sum.Stopped)
	}
	got, want := weightsBytes(t, resumed), weightsBytes(t, ref)
	for p, w := range want {
		if !bytes.Equal(got[p], w) {
			t.Fatalf("variable %s differs after a hook's stop at 7 and resume", p)
		}
	}
	// The same losses, step by step; the stopped run's extra evaluation at step 7 is the one
	// difference.
	a, b := records(t, refDir), records(t, dir)
	if len(a) != len(b) {
		t.Fatalf("%d records, want %d", len(b), len(a))
	}
	for i := range a {
		if a[i]["loss"] != b[i]["loss"] || a[i]["lr"] != b[i]["lr"] {
			t.Fatalf("step %d: loss %v lr %v, uninterrupted %v %v", i+1, b[i]["loss"], b[i]["lr"], a[i]["loss"], a[i]["lr"])
		}
		if _, dev := b[i]["dev_neg_norm"]; dev != (i+1 == 7 || (i+1)%4 == 0 || i+1 == 30) {
			t.Errorf("step %d: dev metrics %v", i+1, dev)
		}
	}
}
