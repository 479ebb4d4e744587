package train

import (
	"time"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/backend"
)

// OpenBackend opens the training backend name ("": the default, see package backend) and
// checks that it has the devices a run splits its batches over (CheckDevices).
func OpenBackend(name string, devices int) (compute.Backend, error) {
	bk, err := backend.Open(backend.Training(backend.Name(name)))
	if err != nil {
		return nil, err
	}
	if err := CheckDevices(bk, devices); err != nil {
		return nil, err
	}
	return bk, nil
}

// RunSettings holds the trainer's settings every kind's training configuration carries (the run,
// its length, its selection, the optimizer's knobs): the one place a recipe turns them into
// a Config.
type RunSettings struct {
	RunDir    string
	Seed      uint64
	Epochs    int
	MaxSteps  int           // stop after this many optimizer steps, the schedule fitted to them (0: all of Epochs)
	MaxTime   time.Duration // stop at the first step past this time (0: no limit)
	EvalEvery int           // optimizer steps between dev evaluations (0: each epoch)
	Metric    string        // the dev metric selecting the best checkpoint
	Patience  int           // evaluations without improvement before stopping (0: never)
	KeepLast  int           // checkpoints kept besides the best (0: 2)

	LR          float64
	WeightDecay float64
	Schedule    string  // linear, cosine or constant
	Clip        float64 // global gradient-norm clipping (0: off)
	Accumulate  int     // micro-batches per optimizer step (0: 1)
	Warmup      float64 // warm-up, a fraction of the steps

	Fingerprint string // the dataset's (data.Dataset.Fingerprint)
	Devices     int
	Quiet       bool
}

// Config returns the trainer's configuration of a run of task and its number of optimizer
// steps: the batches of every epoch over Accumulate, capped at MaxSteps; the warm-up is
// Warmup of those steps. The optimizer is DefaultOptimizer with these knobs; a recipe may
// change more of it (tc.Optimizer) before it trains.
func (s RunSettings) Config(task Task) (Config, int) {
	acc := max(s.Accumulate, 1)
	opt := DefaultOptimizer()
	opt.LR, opt.WeightDecay, opt.Schedule, opt.ClipNorm, opt.Accumulate = s.LR, s.WeightDecay, s.Schedule, s.Clip, acc
	steps := 0
	for e := 0; e < s.Epochs; e++ {
		steps += task.Batches(e) / acc
	}
	if s.MaxSteps > 0 && s.MaxSteps < steps {
		steps = s.MaxSteps
	}
	opt.Warmup = int(s.Warmup * float64(steps))
	keep := s.KeepLast
	if keep == 0 {
		keep = 2
	}
	return Config{RunDir: s.RunDir, Seed: s.Seed, Epochs: s.Epochs, MaxSteps: s.MaxSteps, MaxTime: s.MaxTime, EvalEvery: s.EvalEvery,
		Metric: s.Metric, Patience: s.Patience, KeepLast: keep, Optimizer: opt, Fingerprint: s.Fingerprint, Devices: s.Devices,
		Quiet: s.Quiet}, steps
}
