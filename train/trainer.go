package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/rundir"
)

// Task is what a model kind gives the trainer.
type Task interface {
	// Loss builds the loss of one batch; the graph is already in training mode.
	Loss(scope *model.Scope, inputs []*Node) *Node
	// Batches is the number of micro-batches of an epoch (it may vary between epochs).
	Batches(epoch int) int
	// Batch returns the inputs of micro-batch i of epoch and its number of examples. It must
	// be a pure function of (seed, epoch, i), so that a resumed run sees the same data.
	Batch(epoch, i int) (inputs []*tensors.Tensor, examples int, err error)
	// Evaluate returns dev metrics for the current weights of store.
	Evaluate(store *model.Store) (map[string]float64, error)
	// Files returns the files stored with each checkpoint (model config, tokenizer, ...).
	Files() (map[string][]byte, error)
}

// Shapes is implemented by a Task whose batches come in more distinct input shapes than a
// GoMLX executable caches by default (graph.DefaultExecMaxCacheSize, 32: one compiled graph
// per shape, an error past the limit), such as batches padded to their longest text:
// MaxShapes bounds their number, and the trainer caches that many.
type Shapes interface {
	MaxShapes() int
}

// Config configures a training run.
type Config struct {
	RunDir   string `json:"run_dir"`
	Seed     uint64 `json:"seed"`
	Epochs   int    `json:"epochs"`
	MaxSteps int    `json:"max_steps,omitempty"` // stop after this many optimizer steps (0: all the epochs' steps)
	// MaxTime stops the run at the first optimizer step that ends this long after Run began
	// (set-up and compilation included), evaluating and checkpointing there as at the last
	// step; the learning-rate schedule keeps its full length (0: no limit). Like Lightning's
	// max_time, for a run that must end inside a lease. Not recorded in ConfigFile: a resumed
	// run may be given another limit.
	MaxTime     time.Duration `json:"-"`
	EvalEvery   int           `json:"eval_every"` // optimizer steps between evaluations/checkpoints (0: once per epoch)
	Metric      string        `json:"metric"`     // dev metric to maximise for the best checkpoint ("" = last)
	Patience    int           `json:"patience"`   // evaluations without improvement before stopping (0 = never)
	KeepLast    int           `json:"keep_last"`  // checkpoints kept besides the best
	Optimizer   Optimizer     `json:"optimizer"`
	Fingerprint string        `json:"data_fingerprint"`
	// Devices splits each batch over this many devices of the backend (data parallelism,
	// see stepExec); 0 or 1: one device. It does not change the result beyond float rounding,
	// so a run may be resumed on another count.
	Devices int  `json:"devices,omitempty"`
	Quiet   bool `json:"-"`
	// StopAfter stops the run after this many optimizer steps as if it had been killed (tests).
	StopAfter int `json:"-"`
	// Hooks are called by the training loop after Run's own (see Hook); not recorded.
	Hooks []Hook `json:"-"`
}

// Summary is written to RUN/summary.json at the end of a run.
type Summary struct {
	Steps       int                `json:"steps"`
	Epochs      int                `json:"epochs"`
	BestStep    int                `json:"best_step"`
	BestMetrics map[string]float64 `json:"best_metrics"`
	Final       map[string]float64 `json:"final_metrics"`
	Seconds     float64            `json:"seconds"`
	// CompileSeconds is the part of Seconds spent compiling the training step, once per input
	// shape (on one device the compilation alone; with Devices > 1 the first step of each shape
	// too); not the evaluation's graphs, and not counted with GradCache (Cached tasks).
	CompileSeconds float64 `json:"compile_seconds"`
	Stopped        string  `json:"stopped"`
}

// ErrStopped is what Run's error wraps when Config.StopAfter ends a run early.
var ErrStopped = errors.New("train: stopped by StopAfter")

type best struct {
	Step    int                `json:"step"`
	Metrics map[string]float64 `json:"metrics"`
	Bad     int                `json:"evals_without_improvement"`
}

// Run trains task's model in store (already initialised or restored) with cfg. With resume,
// it continues from the newest checkpoint of cfg.RunDir, into a fresh store: store must then
// be empty; the model's variables are restored from the checkpoint.
//
// Run sets the run up (its steps, the optimizer, the compiled step, the resumed state) and
// runs a Loop with its hooks: the progress bar, MaxTime, the dev evaluation, metrics.jsonl and
// summary.json, checkpoints, plot.html and Patience (see the Priority constants), then
// cfg.Hooks.
func Run(be compute.Backend, store *model.Store, task Task, cfg Config, resume bool) (*Summary, error) {
	start := time.Now()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if ct, ok := task.(Cached); ok && ct.MiniBatch() > 0 && cfg.Devices > 1 {
		return nil, fmt.Errorf("train: mini-batches of %d (GradCache) run on one device, not %d", ct.MiniBatch(), cfg.Devices)
	}
	if cfg.Devices == 1 {
		cfg.Devices = 0 // one device, as before the field existed (train_config.json omits it)
	}
	if err := os.MkdirAll(cfg.RunDir, 0o755); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	l := &Loop{Task: task, Store: store, Start: start, acc: max(cfg.Optimizer.Accumulate, 1), best: best{Step: -1}}
	// Batches per epoch (rounded down to whole optimizer steps) and the total step count.
	l.perEpoch = make([]int, cfg.Epochs)
	for e := range l.perEpoch {
		n := task.Batches(e)
		l.perEpoch[e] = n / l.acc * l.acc
		if l.perEpoch[e] == 0 {
			return nil, fmt.Errorf("train: epoch %d has %d batches: not enough for one step of %d accumulated batches", e, n, l.acc)
		}
		l.Total += l.perEpoch[e] / l.acc
	}
	if cfg.MaxSteps > 0 && cfg.MaxSteps < l.Total {
		l.Total = cfg.MaxSteps
	}
	if cfg.Optimizer.TotalSteps == 0 {
		cfg.Optimizer.TotalSteps = l.Total
	}
	if err := cfg.Optimizer.Validate(); err != nil {
		return nil, err
	}
	l.Config = cfg
	if resume {
		if err := l.resume(be); err != nil {
			return nil, err
		}
	} else if steps, _ := checkpoints.List(cfg.RunDir); len(steps) > 0 {
		return nil, fmt.Errorf("run directory %s already has checkpoints: use -resume, or another -run", cfg.RunDir)
	} else if err := rundir.WriteJSON(cfg.RunDir, ConfigFile, cfg); err != nil {
		return nil, err
	}
	l.First = l.Step
	files, err := task.Files()
	if err != nil {
		return nil, err
	}
	if l.exec, err = newStepper(be, store, task, cfg); err != nil {
		return nil, err
	}
	mf, err := os.OpenFile(filepath.Join(cfg.RunDir, "metrics.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	defer mf.Close()

	// Hooks of equal priority run in the order added: the progress bar's dev line after the
	// evaluation, the time limit's stop after early stopping.
	p := &progressBar{}
	l.add(evaluateHook())
	l.add(progressHooks(p)...)
	l.add(recordHook(bufio.NewWriter(mf), mf.Name()), checkpointHook(files), plotHook())
	if cfg.Patience > 0 {
		l.add(earlyStopHook())
	}
	if cfg.MaxTime > 0 {
		l.add(timeLimitHooks()...)
	}
	if cfg.StopAfter > 0 {
		l.add(stopAfterHook(p))
	}
	l.add(cfg.Hooks...)
	return l.run()
}

// resume restores l's store and position from the newest checkpoint of its run directory,
// after checking that the run was started with the same configuration and data, and drops
// the metrics recorded after it.
func (l *Loop) resume(be compute.Backend) error {
	cfg := l.Config
	steps, err := checkpoints.List(cfg.RunDir)
	if err != nil {
		return err
	}
	if len(steps) == 0 {
		return fmt.Errorf("resume %s: no checkpoint", cfg.RunDir)
	}
	c, err := checkpoints.Load(checkpoints.Dir(cfg.RunDir, steps[len(steps)-1]))
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if err := checkRecorded(cfg); err != nil {
		return err
	}
	if c.Manifest.Fingerprint != cfg.Fingerprint {
		return fmt.Errorf("resume %s: checkpoint was trained on other data (fingerprint %.12s, this data %.12s)", c.Dir, c.Manifest.Fingerprint, cfg.Fingerprint)
	}
	if err := c.Restore(l.Store, be); err != nil {
		return err
	}
	l.Step, l.Epoch, l.Position = c.Manifest.Step, c.Manifest.Epoch, c.Manifest.Position
	if raw, ok := c.Manifest.Extra["best"]; ok {
		bb, err := json.Marshal(raw)
		if err == nil {
			err = json.Unmarshal(bb, &l.best)
		}
		if err != nil {
			return fmt.Errorf("resume %s: best-checkpoint record: %w", c.Dir, err)
		}
	}
	return truncateMetrics(filepath.Join(cfg.RunDir, "metrics.jsonl"), l.Step)
}

// newStepper compiles task's training step: with GradCache for a Cached task with
// mini-batches, else split over cfg.Devices.
func newStepper(be compute.Backend, store *model.Store, task Task, cfg Config) (stepper, error) {
	var exec stepper
	opt := cfg.Optimizer
	if ct, ok := task.(Cached); ok && ct.MiniBatch() > 0 {
		exec = newCacheStep(be, store, ct, opt)
	} else {
		var err error
		exec, err = newStepExec(be, store, cfg.Devices, func(s *model.Scope, inputs []*Node) []*Node {
			g := inputs[0].Graph()
			s.SetTraining(g, true)
			loss := task.Loss(s, inputs)
			lr, norm := opt.Update(s, loss)
			return []*Node{ConvertDType(loss, lr.DType()), lr, norm}
		})
		if err != nil {
			return nil, err
		}
	}
	if cfg.Devices > 1 {
		fmt.Fprintf(msgs, "devices: each batch split over %d of the %d devices of %s\n", cfg.Devices, be.NumDevices(), be.Description())
	}
	if sh, ok := task.(Shapes); ok && sh.MaxShapes() > DefaultExecMaxCacheSize {
		exec.setMaxCache(sh.MaxShapes()) // one compiled step per input shape
	}
	return exec, nil
}

// stepper runs one batch's step: the loss, the learning rate (0 on accumulation-only
// micro-batches) and the gradient norm.
type stepper interface {
	call(inputs []*tensors.Tensor) ([]*tensors.Tensor, error)
	setMaxCache(n int)
}

// truncateMetrics drops records after step (they are recomputed by a resumed run).
func truncateMetrics(path string, step int) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var keep []byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var rec struct {
			Step int `json:"step"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Step <= step {
			keep = append(append(keep, sc.Bytes()...), '\n')
		}
	}
	return rundir.WriteFile(path, keep)
}

// ConfigFile is the name of the trainer's configuration in a run directory.
const ConfigFile = "train_config.json"

// Validate checks a training configuration.
func (c Config) Validate() error {
	switch {
	case c.RunDir == "":
		return fmt.Errorf("train: no run directory")
	case c.Epochs < 1:
		return fmt.Errorf("train: -epochs %d: must be >= 1", c.Epochs)
	case c.MaxSteps < 0:
		return fmt.Errorf("train: -max-steps %d: must be >= 0", c.MaxSteps)
	case c.MaxTime < 0:
		return fmt.Errorf("train: -max-time %v: must be >= 0", c.MaxTime)
	case c.EvalEvery < 0:
		return fmt.Errorf("train: -eval-every %d: must be >= 0", c.EvalEvery)
	case c.Patience < 0:
		return fmt.Errorf("train: -patience %d: must be >= 0", c.Patience)
	case c.Devices < 0:
		return fmt.Errorf("train: -devices %d: must be >= 0", c.Devices)
	case c.KeepLast < 0:
		return fmt.Errorf("train: keep-last %d: must be >= 0", c.KeepLast)
	}
	for i, h := range c.Hooks {
		if h.Name == "" {
			return fmt.Errorf("train: hook %d of %d has no name", i+1, len(c.Hooks))
		}
	}
	return nil
}

// checkRecorded refuses to resume a run with a training configuration other than the one it
// was started with, naming each field that differs.
func checkRecorded(cfg Config) error {
	p := filepath.Join(cfg.RunDir, ConfigFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("resume: %s: %w", p, err)
	}
	nb, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	var now map[string]any
	if err := json.Unmarshal(nb, &now); err != nil {
		return err
	}
	var diffs []string
	flatDiff("", rec, now, &diffs)
	if len(diffs) == 0 {
		return nil
	}
	sort.Strings(diffs)
	return fmt.Errorf("resume %s: refused, the training configuration differs from the run's %s:\n  %s", cfg.RunDir, ConfigFile, strings.Join(diffs, "\n  "))
}

func flatDiff(prefix string, a, b map[string]any, out *[]string) {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for k := range keys {
		if prefix == "" && (k == "run_dir" || k == "data_fingerprint" || k == "devices") { // the checkpoint checks the data; devices do not change the result
			continue
		}
		name := prefix + k
		am, aok := a[k].(map[string]any)
		bm, bok := b[k].(map[string]any)
		if aok && bok {
			flatDiff(name+".", am, bm, out)
			continue
		}
		ab, _ := json.Marshal(a[k])
		bb, _ := json.Marshal(b[k])
		if string(ab) != string(bb) {
			*out = append(*out, fmt.Sprintf("%s: run has %s, given %s", name, ab, bb))
		}
	}
}

func sortedKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
