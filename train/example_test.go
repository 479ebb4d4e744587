package train

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/backend"
)

// ExampleHook adds two hooks to a run: one counts its steps and prints its evaluations, the
// other stops it at step 5, which is then evaluated and checkpointed as a last step is.
func ExampleHook() {
	dir, err := os.MkdirTemp("", "hooks")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	be, err := backend.Open("go")
	if err != nil {
		log.Fatal(err)
	}
	steps := 0
	cfg := Config{RunDir: filepath.Join(dir, "run"), Seed: 1, Epochs: 3, Metric: "neg_norm",
		Optimizer: DefaultOptimizer(), Fingerprint: "toy", Quiet: true}
	cfg.Hooks = []Hook{
		{Name: "count", Priority: PriorityEvaluate + 1, // after the dev evaluation: Step.Dev is set
			OnStep: func(l *Loop, s *Step) error {
				steps++
				if s.Eval {
					fmt.Printf("step %d of %d: dev neg_norm %.2f\n", s.Step, l.Total, s.Dev["neg_norm"])
				}
				return nil
			},
		},
		{Name: "stop at 5",
			OnStep: func(l *Loop, s *Step) error {
				if s.Step == 5 {
					return Stop("5 steps are enough")
				}
				return nil
			},
		},
	}
	task := &toyTask{seed: 1, batches: 8} // any Task: 3 epochs of 8 batches here
	sum, err := Run(be, newToyStore(), task, cfg, false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d steps counted; summary: %d steps, stopped: %s\n", steps, sum.Steps, sum.Stopped)
	// Output:
	// step 5 of 24: dev neg_norm -0.57
	// 5 steps counted; summary: 5 steps, stopped: 5 steps are enough
}
