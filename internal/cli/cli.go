// Package cli is toolret's one command-line vocabulary: every command registers the flags
// shared across commands through these functions, so the same concept has the same name,
// default and help everywhere. The vocabulary (README, "Command-line vocabulary"):
//
//	-data DIR          dataset (BEIR or Parquet); empty: the embedded default dataset
//	-holdout-tools F, -holdout-seed N   evaluate on tools never seen in training: the
//	                   held-out-tool view of -data (LoadData; data.Dataset.HoldoutTools)
//	-run DIR           the run directory a command trains into or reads
//	-first-stage DIR     the stage-1 bi-encoder run a later stage builds on
//	-backend NAME      compute backend: go (default), onnx, xla:cpu, xla:cuda
//	-quantize Q        the encoder's weights: int8, int8-tensor or none (fp32); int8 runs on
//	                   -backend onnx (export.Quantization)
//	-seed N            random seed (default 1)
//	-dev F             dev fraction carved from the training queries (default 0.1); later
//	                   stages take their retriever's recorded dev split
//	-split NAME        the split a command evaluates or reads (eval: test)
//	-k N               how many tools a query gets back (top-k)
//	-cutoffs LIST      the metric cutoffs K of Recall/NDCG/COMP@K
//	-vocab FILE        a vocab.txt;  -vocab-size N  the size of a vocabulary to build
//	-query-len, -tool-len, -max-len   token limits (bi-encoder towers; single-sequence and pair models)
//	-temperature T     softmax temperature of a contrastive or list-wise loss
//	-batch N, -epochs N, -lr F, -weight-decay F, -warmup F, -metric NAME, -patience N
//	-resume            continue -run from its newest checkpoint with the run's recorded
//	                   configuration (flags given that differ from it are refused)
//	-quiet             no progress bar
//	-ensemble DIR,...  (eval -index, serve) more exported indexes fused with -index per query,
//	                   -ensemble-fusion rrf|minmax|zscore, -ensemble-weights W,... (Ensemble)
package cli

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rundir"
)

// Defaults shared by every command.
const (
	DefaultSeed = rundir.DefaultSeed
	DefaultDev  = rundir.DefaultDev
)

// Data registers -data, and -holdout-tools and -holdout-seed (Holdout): load the dataset they
// name with LoadData.
func Data(fs *flag.FlagSet) *string {
	p := fs.String("data", "", "dataset directory (BEIR or Parquet layout); default: the embedded default dataset")
	Holdout(fs)
	return p
}

// Run registers -run with a command-specific help text.
func Run(fs *flag.FlagSet, help string) *string { return fs.String("run", "", help) }

// FirstStage registers -first-stage: the stage-1 bi-encoder run.
func FirstStage(fs *flag.FlagSet) *string {
	return fs.String("first-stage", "", "stage-1 bi-encoder run (train biencoder); its recorded dev split is used")
}

// Backend registers -backend.
func Backend(fs *flag.FlagSet) *string {
	return fs.String("backend", "", "compute backend: go (default), onnx, xla:cpu, xla:cuda")
}

// Quantize registers -quantize (export.ParseQuantization reads it).
func Quantize(fs *flag.FlagSet, what string) *string {
	return fs.String("quantize", "", what+": int8 (int8 weights per output channel, activations quantized per batch; needs -backend onnx), int8-tensor (one scale per matrix) or none (fp32)")
}

// Devices registers -devices: how many devices of the backend each batch is split over
// (train.Config.Devices).
func Devices(fs *flag.FlagSet) *int {
	return fs.Int("devices", 1, "split each batch over this many devices of -backend (data parallelism, gradients summed across devices: the same result as one device; needs xla:cpu,devices=N or xla:cuda with N GPUs)")
}

// Seed registers -seed.
func Seed(fs *flag.FlagSet) *uint64 { return fs.Uint64("seed", DefaultSeed, "random seed") }

// Dev registers -dev.
func Dev(fs *flag.FlagSet) *float64 {
	return fs.Float64("dev", DefaultDev, "fraction of the training queries held out as the dev split (model selection)")
}

// Quiet registers -quiet.
func Quiet(fs *flag.FlagSet) *bool { return fs.Bool("quiet", false, "no progress bar") }

// Resume registers -resume.
func Resume(fs *flag.FlagSet) *bool {
	return fs.Bool("resume", false, "continue the run in -run from its newest checkpoint, with the configuration recorded in the run (flags given that differ from it are refused)")
}

// Cutoffs registers -cutoffs.
func Cutoffs(fs *flag.FlagSet) *string {
	return fs.String("cutoffs", "1,3,5,10", "metric cutoffs K (Recall/NDCG/COMP@K), comma-separated")
}

// Metric registers -metric, the dev metric that selects the best checkpoint.
func Metric(fs *flag.FlagSet, def string) *string {
	return fs.String("metric", def, "dev metric selecting the best checkpoint: recall@K, ndcg@K or comp@K with K in 1,3,5,10")
}

// DevKs are the cutoffs of every dev evaluation during training (metrics.DevKs).
var DevKs = metrics.DevKs

// CheckMetric reports an error unless name is a metric the dev evaluation computes
// (metrics.CheckDevMetric, worded as -metric).
func CheckMetric(name string) error { return check.Flag(metrics.CheckDevMetric(name)) }

// ParseCutoffs parses a -cutoffs list: positive integers, comma-separated.
func ParseCutoffs(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return metrics.DefaultKs, nil
	}
	var ks []int
	for _, f := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k <= 0 {
			return nil, fmt.Errorf("-cutoffs %q: %q is not a positive integer", s, f)
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// Args returns the value of every flag of fs, by name.
func Args(fs *flag.FlagSet) map[string]string {
	out := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { out[f.Name] = f.Value.String() })
	return out
}

// Set returns the names of the flags given on the command line.
func Set(fs *flag.FlagSet) map[string]bool {
	out := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { out[f.Name] = true })
	return out
}

// Positive returns an error naming the flag when v <= 0 (check.Positive, worded as a flag).
func Positive[T int | int64 | uint64 | float64](name string, v T) error {
	return check.Flag(check.Positive(name, v))
}

// NonNegative returns an error naming the flag when v < 0.
func NonNegative[T int | int64 | float64](name string, v T) error {
	return check.Flag(check.NonNegative(name, v))
}

// The learning rates LR accepts without a warning: AdamW on transformers trains from scratch
// at ~1e-3 down to ~1e-4 and fine-tunes at 1e-5 to 5e-5; every train command's default is in
// between.
const (
	MaxUsualLR = 1e-2
	MinUsualLR = 1e-7
)

// LR checks -lr: an error unless v > 0, and a warning on Stderr naming the value and the
// usual range when v is above MaxUsualLR (training diverges: "-lr 5e4" for 5e-4) or below
// MinUsualLR (training does not move). Every train command checks its -lr with it.
func LR(v float64) error {
	if err := Positive("lr", v); err != nil {
		return err
	}
	switch {
	case v > MaxUsualLR:
		hint := ""
		if e := math.Floor(math.Log10(v)); e >= 1 {
			hint = fmt.Sprintf("; did you mean %ge-%g?", v/math.Pow(10, e), e)
		}
		fmt.Fprintf(stderr(), "warning: -lr %g is far above the usual learning rates (1e-3 to 1e-4 from scratch, 1e-5 to 5e-5 to fine-tune; above %g training usually diverges)%s\n", v, MaxUsualLR, hint)
	case v < MinUsualLR:
		fmt.Fprintf(stderr(), "warning: -lr %g is far below the usual learning rates (1e-3 to 1e-4 from scratch, 1e-5 to 5e-5 to fine-tune): the weights will barely change\n", v)
	}
	return nil
}

// Fraction returns an error naming the flag unless 0 < v < 1.
func Fraction(name string, v float64) error { return check.Flag(check.Fraction(name, v)) }

// First returns the first non-nil error.
func First(errs ...error) error { return check.First(errs...) }

// Unprefixed returns err with a leading "name: " removed from its message, for a command
// that prints "name: " before its errors and would otherwise print it twice ("export:
// export: ..."); errors.Is and errors.As still see err. nil stays nil.
func Unprefixed(name string, err error) error {
	if err == nil {
		return nil
	}
	msg, ok := strings.CutPrefix(err.Error(), name+": ")
	if !ok {
		return err
	}
	return &unprefixed{msg, err}
}

type unprefixed struct {
	msg string
	err error
}

func (e *unprefixed) Error() string { return e.msg }
func (e *unprefixed) Unwrap() error { return e.err }
