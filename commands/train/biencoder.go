package traincmd

import (
	"context"
	"flag"
	"fmt"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/internal/flagcfg"
	"github.com/toolret/toolret/internal/runs"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/recipe"
	"github.com/toolret/toolret/rundir"
)

// checkNewRun refuses to start a new run in a directory that already holds one.
func checkNewRun(dir string) error { return rundir.CheckNew(dir) }

func checkWarmup(w float64) error { return runs.CheckWarmup(w) }

// trainPadding returns the batch padding of -pad-multiple n. A resumed run made before the
// flag existed (its recorded flags lack it) keeps the padding it was trained with, the
// tokenizer's buckets, so that it resumes bit for bit; giving -pad-multiple to it is refused.
func trainPadding(fs *flag.FlagSet, meta *rundir.Meta, n int) (biencoder.Padding, error) {
	if meta != nil {
		if _, ok := meta.Args["pad-multiple"]; !ok {
			if cli.Set(fs)["pad-multiple"] {
				return 0, fmt.Errorf("-pad-multiple %d: run %s was trained before -pad-multiple existed (batches padded to the tokenizer's length buckets) and resumes with that padding: omit -pad-multiple", n, fs.Lookup("run").Value)
			}
			return biencoder.PadTokenizer, nil
		}
	}
	return biencoder.PadMultiple(n)
}

// trainRegularization returns the -freeze-embeddings, -tool-dropout and -freeze-tower
// options. A resumed run made before these flags existed (its recorded flags lack them)
// trained without them: giving it one with another value than its default is refused, as the
// run would change what it trains on halfway.
func trainRegularization(fs *flag.FlagSet, meta *rundir.Meta, freeze bool, dropout float64, tower string) (biencoder.Regularization, error) {
	if meta != nil {
		set := cli.Set(fs)
		for _, n := range []string{"freeze-embeddings", "tool-dropout", "freeze-tower"} {
			f := fs.Lookup(n)
			if _, ok := meta.Args[n]; !ok && set[n] && f.Value.String() != f.DefValue {
				return biencoder.Regularization{}, fmt.Errorf("-%s %s: run %s was trained before -%s existed (as -%s %s) and resumes so: omit -%s", n, f.Value, fs.Lookup("run").Value, n, n, f.DefValue, n)
			}
		}
	}
	r := biencoder.Regularization{FreezeEmbeddings: freeze, ToolDropout: dropout, FreezeTower: tower}
	if !(dropout >= 0 && dropout < 1) {
		return r, fmt.Errorf("-tool-dropout %v: a probability, must be in [0, 1)", dropout)
	}
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("-freeze-tower: %w", err)
	}
	return r, nil
}

// biencoderFlags returns train biencoder's flags and the configuration they write: one flag
// per field of biencoder.TrainConfig (flagcfg.Bind: its json name, its help tag, its value in
// DefaultTrainConfig as the default; "auto" fields default to their zero), and the
// operational -run, -resume, -backend, -devices and -quiet.
func biencoderFlags() (*flag.FlagSet, *biencoder.TrainConfig, headOps, error) {
	fs := flag.NewFlagSet("train biencoder", flag.ContinueOnError)
	cfg := biencoder.DefaultTrainConfig()
	if _, err := flagcfg.Bind(fs, &cfg); err != nil {
		return nil, nil, headOps{}, err
	}
	return fs, &cfg, declareOps(fs, "biencoder"), nil
}

func biencoderCmd(args []string) error {
	fs, cfg, op, err := biencoderFlags()
	if err != nil {
		return err
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	meta, err := openRun(fs, op.run, *op.resume, "biencoder", "biencoder", "bi-encoder", cfg)
	if err != nil {
		return err
	}
	// The checks of runs made before a flag existed; the library checks the values.
	t := &cfg.Training
	padding, err := trainPadding(fs, meta, t.PadMultiple)
	if err != nil {
		return err
	}
	if _, err := trainRegularization(fs, meta, t.FreezeEmbeddings, t.ToolDropout, t.FreezeTower); err != nil {
		return err
	}
	if err := checkToolQueries(fs, meta, t.ToolQueries, cfg.Model.Objective == biencoder.ObjectiveQuery2Query, cfg.Parent.Feedback != ""); err != nil {
		return err
	}
	set := cli.Set(fs)
	if set["dev"] { // 0 is the recipe's "auto": a -dev given must be a fraction
		if err := cli.Fraction("dev", cfg.Split.Dev); err != nil {
			return err
		}
	}
	if cfg.Split.Usage != "" && !set["hard-negatives"] && !*op.resume { // a resumed run has its recorded value
		t.HardNegatives = 1 // the tools shown and not called
	}
	if padding == biencoder.PadTokenizer {
		t.PadMultiple = -1
	}
	cfg.RunDir, cfg.Resume, cfg.Backend, cfg.Devices, cfg.Quiet, cfg.Args = *op.run, *op.resume, *op.backend, *op.devices, *op.quiet, cli.Args(fs)
	_, err = recipe.BiEncoder(context.Background(), *cfg)
	return check.Flag(err) // the library names a setting ("batch 0: ..."), the command its flag
}
