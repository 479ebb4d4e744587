package biencoder

import (
	"strings"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/metrics"
)

// Validate checks the ranges of c's settings, each error naming the setting (a
// *check.Error: "batch 0: must be > 0"; check.Flag words it as the flag). A field left at
// its "auto" zero (lr, dev) is valid. The checks that need more than the values (the
// architecture, the parent runs, the files) are the trainer's (recipe.BiEncoder).
func (c TrainConfig) Validate() error {
	m, t, sp := c.Model, c.Training, c.Split
	err := check.First(check.Positive("batch", t.Batch), check.Positive("epochs", t.Epochs), auto(check.Positive[float64], "lr", t.LR),
		check.Positive("temperature", m.Temperature), check.Positive("accumulate", t.Accumulate), check.NonNegative("mini-batch", t.MiniBatch),
		auto(check.Fraction, "dev", sp.Dev), check.NonNegative("weight-decay", t.WeightDecay), check.NonNegative("clip", t.Clip),
		check.NonNegative("hard-negatives", t.HardNegatives), check.NonNegative("eval-every", t.EvalEvery), check.NonNegative("patience", t.Patience),
		metrics.CheckDevMetric(t.Metric), check.NonNegative("max-steps", t.MaxSteps), m.CheckLoRA(), check.NonNegative("max-time", int64(t.MaxTime)), checkWarmup(t.Warmup),
		checkPrecision(t.Precision))
	if err != nil || c.Parent.Init != "" {
		return err
	}
	return check.First(check.Positive("layers", m.Layers), check.Positive("hidden", m.Hidden), check.Positive("heads", m.Heads),
		check.NonNegative("intermediate", m.Intermediate), check.Positive("vocab-size", m.VocabSize))
}

// auto applies the check f to a setting whose zero is "auto".
func auto(f func(string, float64) error, name string, v float64) error {
	if v == 0 {
		return nil
	}
	return f(name, v)
}

// checkWarmup checks the warm-up fraction of the steps.
func checkWarmup(w float64) error {
	if !(w >= 0 && w < 1) {
		return check.Invalid("warmup", w, "a fraction of the steps, must be in [0, 1)")
	}
	return nil
}

// checkPrecision checks the precision name ("" is the default, fp32).
func checkPrecision(p string) error {
	if p == "" {
		return nil
	}
	if backend.CheckPrecision("precision", p) != nil {
		return check.Quoted("precision", p, "want "+strings.Join(backend.Precisions, ", "))
	}
	return nil
}
