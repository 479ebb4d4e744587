package traincmd

import (
	"context"
	"flag"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/crossencoder"
)

// crossencoderFlags returns train crossencoder's flags and the configuration they write: one
// flag per field of crossencoder.TrainConfig, its value in DefaultTrainConfig as the default,
// and the operational flags (headFlags).
func crossencoderFlags() (*flag.FlagSet, *crossencoder.TrainConfig, headOps, error) {
	cfg := crossencoder.DefaultTrainConfig()
	fs, op, err := headFlags("crossencoder", "crossencoder", &cfg)
	return fs, &cfg, op, err
}

// crossencoderCmd is `train crossencoder`: the flags of crossencoder.TrainConfig.
func crossencoderCmd(args []string) error {
	// A cross-encoder started from random weights learns no query-tool matching in these
	// budgets (its loss stays at the prior's for thousands of steps): it warm-starts from the
	// retriever's encoder (DefaultTrainConfig's WarmStart) unless -warm-start=false, -init or
	// a from-scratch size is given.
	fs, cfg, op, err := crossencoderFlags()
	if err != nil {
		return err
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	defaultWarm(fs, &cfg.Head)
	if err := startHead(fs, op, cfg, &cfg.Head, "crossencoder", "crossencoder"); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return check.Flag(err) // the library names a setting, the command its flag
	}
	d, err := cli.LoadSources(fs)
	if err != nil {
		return err
	}
	cfg.Data, cfg.Args = d, cli.Args(fs)
	_, err = crossencoder.Train(context.Background(), *cfg)
	return check.Flag(err)
}
