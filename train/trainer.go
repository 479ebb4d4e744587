package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
	"github.com/toolret/toolret/internal/progress"
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
}

// Summary is written to RUN/summary.json at the end of a run.
type Summary struct {
	Steps       int                `json:"steps"`
	Epochs      int                `json:"epochs"`
	BestStep    int                `json:"best_step"`
	BestMetrics map[string]float64 `json:"best_metrics"`
	Final       map[string]float64 `json:"final_metrics"`
	Seconds     float64            `json:"seconds"`
	Stopped     string             `json:"stopped"`
}

// ErrStopped is returned when Config.StopAfter ends a run early.
var ErrStopped = errors.New("train: stopped by StopAfter")

type best struct {
	Step    int                `json:"step"`
	Metrics map[string]float64 `json:"metrics"`
	Bad     int                `json:"evals_without_improvement"`
}

// Run trains task's model in store (already initialised or restored) with cfg. With resume,
// it continues from the newest checkpoint of cfg.RunDir, into a fresh store: store must then
// be empty; the model's variables are restored from the checkpoint.
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
	acc := max(cfg.Optimizer.Accumulate, 1)
	// Batches per epoch (rounded down to whole optimizer steps) and the total step count.
	perEpoch := make([]int, cfg.Epochs)
	total := 0
	for e := range perEpoch {
		n := task.Batches(e)
		perEpoch[e] = n / acc * acc
		if perEpoch[e] == 0 {
			return nil, fmt.Errorf("train: epoch %d has %d batches: not enough for one step of %d accumulated batches", e, n, acc)
		}
		total += perEpoch[e] / acc
	}
	stepsPerEpoch := perEpoch[0] / acc
	if cfg.MaxSteps > 0 && cfg.MaxSteps < total {
		total = cfg.MaxSteps
	}
	if cfg.Optimizer.TotalSteps == 0 {
		cfg.Optimizer.TotalSteps = total
	}
	if err := cfg.Optimizer.Validate(); err != nil {
		return nil, err
	}
	evalEvery := cfg.EvalEvery
	if evalEvery <= 0 {
		evalEvery = stepsPerEpoch
	}
	step, epoch, pos := 0, 0, 0
	b := best{Step: -1}
	if resume {
		steps, err := checkpoints.List(cfg.RunDir)
		if err != nil {
			return nil, err
		}
		if len(steps) == 0 {
			return nil, fmt.Errorf("resume %s: no checkpoint", cfg.RunDir)
		}
		c, err := checkpoints.Load(checkpoints.Dir(cfg.RunDir, steps[len(steps)-1]))
		if err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		if err := checkRecorded(cfg); err != nil {
			return nil, err
		}
		if c.Manifest.Fingerprint != cfg.Fingerprint {
			return nil, fmt.Errorf("resume %s: checkpoint was trained on other data (fingerprint %.12s, this data %.12s)", c.Dir, c.Manifest.Fingerprint, cfg.Fingerprint)
		}
		if err := c.Restore(store, be); err != nil {
			return nil, err
		}
		step, epoch, pos = c.Manifest.Step, c.Manifest.Epoch, c.Manifest.Position
		if raw, ok := c.Manifest.Extra["best"]; ok {
			bb, err := json.Marshal(raw)
			if err == nil {
				err = json.Unmarshal(bb, &b)
			}
			if err != nil {
				return nil, fmt.Errorf("resume %s: best-checkpoint record: %w", c.Dir, err)
			}
		}
		if err := truncateMetrics(filepath.Join(cfg.RunDir, "metrics.jsonl"), step); err != nil {
			return nil, err
		}
	} else if steps, _ := checkpoints.List(cfg.RunDir); len(steps) > 0 {
		return nil, fmt.Errorf("run directory %s already has checkpoints: use -resume, or another -run", cfg.RunDir)
	}
	if !resume {
		if err := rundir.WriteJSON(cfg.RunDir, ConfigFile, cfg); err != nil {
			return nil, err
		}
	}
	files, err := task.Files()
	if err != nil {
		return nil, err
	}

	opt := cfg.Optimizer
	var exec stepper
	if ct, ok := task.(Cached); ok && ct.MiniBatch() > 0 {
		exec = newCacheStep(be, store, ct, opt)
	} else {
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
	mf, err := os.OpenFile(filepath.Join(cfg.RunDir, "metrics.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	defer mf.Close()
	mw := bufio.NewWriter(mf)
	var barLoss, barRate float64 // the last step's, shown after the count
	bar := progress.New("step", cfg.Quiet, func() string { return fmt.Sprintf("loss %.4f %.1f ex/s", barLoss, barRate) })
	bar.Update(step, total) // a resumed run's steps done before do not count in the ETA

	save := func(metrics map[string]float64) error {
		m := checkpoints.Manifest{Step: step, Epoch: epoch, Position: pos, Seed: cfg.Seed, Fingerprint: cfg.Fingerprint,
			Metrics: metrics, Extra: map[string]any{"best": b}}
		if _, err := checkpoints.Save(cfg.RunDir, store, m, files); err != nil {
			return err
		}
		protect := []int{}
		if b.Step >= 0 {
			protect = append(protect, b.Step)
		}
		return checkpoints.Prune(cfg.RunDir, max(cfg.KeepLast, 1), protect...)
	}
	var last map[string]float64
	stopped := "completed"
	lossSum, lossN, examples, tick := 0.0, 0, 0, time.Now()
	for step < total {
		if pos >= perEpoch[epoch] {
			epoch, pos = epoch+1, 0
		}
		inputs, n, err := task.Batch(epoch, pos)
		if err != nil {
			return nil, fmt.Errorf("train: epoch %d batch %d: %w", epoch, pos, err)
		}
		out, err := exec.call(inputs)
		if err != nil {
			return nil, fmt.Errorf("train: step %d: %w", step+1, err)
		}
		pos++
		loss := float64(out[0].Value().(float32))
		lr := float64(out[1].Value().(float32))
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return nil, fmt.Errorf("train: loss is %v at step %d (epoch %d, batch %d): stopping; the last good checkpoint is kept in %s", loss, step+1, epoch, pos-1, filepath.Join(cfg.RunDir, "checkpoints"))
		}
		lossSum += loss
		lossN++
		examples += n
		if pos%acc != 0 {
			continue
		}
		step++
		barLoss, barRate = lossSum/float64(lossN), float64(examples)/time.Since(tick).Seconds()
		bar.Update(step, total)
		rec := map[string]any{"step": step, "epoch": epoch, "loss": lossSum / float64(lossN), "lr": lr,
			"examples_per_sec": float64(examples) / time.Since(tick).Seconds()}
		lossSum, lossN, examples, tick = 0, 0, 0, time.Now()
		timeUp := cfg.MaxTime > 0 && time.Since(start) >= cfg.MaxTime
		evalNow := step%evalEvery == 0 || step == total || timeUp
		if evalNow {
			metrics, err := task.Evaluate(store)
			if err != nil {
				return nil, fmt.Errorf("train: evaluation at step %d: %w", step, err)
			}
			last = metrics
			if _, ok := metrics[cfg.Metric]; cfg.Metric != "" && !ok {
				return nil, fmt.Errorf("train: -metric %q is not a dev metric this model reports (have %s)", cfg.Metric, strings.Join(sortedKeys(metrics), ", "))
			}
			for k, v := range metrics {
				rec["dev_"+k] = v
			}
			if cfg.Metric == "" || b.Step < 0 || metrics[cfg.Metric] > b.Metrics[cfg.Metric] {
				b = best{Step: step, Metrics: metrics}
			} else {
				b.Bad++
			}
			bar.Note(fmt.Sprintf("step %d dev %s %.2f (best %.2f at %d)", step, cfg.Metric, metrics[cfg.Metric], b.Metrics[cfg.Metric], b.Step))
		}
		line, err := json.Marshal(rec)
		if err != nil {
			return nil, fmt.Errorf("train: metrics record at step %d: %w", step, err)
		}
		mw.Write(append(line, '\n'))
		if err := mw.Flush(); err != nil {
			return nil, fmt.Errorf("train: write %s: %w", mf.Name(), err)
		}
		if evalNow {
			if pos >= perEpoch[epoch] && step < total {
				// Checkpoints at epoch ends point at the next epoch's start.
				epoch, pos = epoch+1, 0
			}
			if err := save(last); err != nil {
				return nil, err
			}
			if err := writePlot(cfg.RunDir); err != nil {
				return nil, err
			}
			if cfg.Patience > 0 && b.Bad >= cfg.Patience {
				stopped = fmt.Sprintf("early stopping: %d evaluations without improvement", b.Bad)
				break
			}
			if timeUp && step < total {
				stopped = fmt.Sprintf("time limit: -max-time %v reached at step %d of %d", cfg.MaxTime, step, total)
				break
			}
		}
		if cfg.StopAfter > 0 && step >= cfg.StopAfter {
			bar.Finish()
			return nil, ErrStopped
		}
	}
	bar.Finish()
	sum := &Summary{Steps: step, Epochs: epoch + 1, BestStep: b.Step, BestMetrics: b.Metrics, Final: last,
		Seconds: time.Since(start).Seconds(), Stopped: stopped}
	if err := rundir.WriteJSON(cfg.RunDir, "summary.json", sum); err != nil {
		return nil, err
	}
	if err := writePlot(cfg.RunDir); err != nil {
		return nil, err
	}
	fmt.Fprintf(msgs, "plot: %s\n", filepath.Join(cfg.RunDir, PlotFile))
	return sum, nil
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
