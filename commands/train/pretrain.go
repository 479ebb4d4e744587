package traincmd

import (
	"context"
	"flag"
	"fmt"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/pretrain"
)

// pretrainFlags returns train pretrain's flags and the configuration they write: one flag per
// field of pretrain.TrainConfig (flagcfg.Bind: its value in DefaultTrainConfig as the
// default), -data with its -holdout-tools and -holdout-seed, and the operational -run,
// -resume, -backend, -devices and -quiet.
func pretrainFlags() (*flag.FlagSet, *pretrain.TrainConfig, headOps, error) {
	cfg := pretrain.DefaultTrainConfig()
	fs, op, err := headFlags("pretrain", "pretrain", &cfg)
	return fs, &cfg, op, err
}

// pretrainCmd is `train pretrain`: the flags of pretrain.TrainConfig. The bi-encoder,
// cross-encoder and classifier commands warm-start from its runs with -init RUN.
func pretrainCmd(args []string) error {
	fs, cfg, op, err := pretrainFlags()
	if err != nil {
		return err
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if _, err := openRun(fs, op.run, *op.resume, "pretrain", "pretrain", "pretrain", cfg); err != nil {
		return err
	}
	if err := resolveInit(fs, &cfg.Init, nil, nil); err != nil {
		return err
	}
	cfg.RunDir, cfg.Resume, cfg.Backend, cfg.Devices, cfg.Quiet = *op.run, *op.resume, *op.backend, *op.devices, *op.quiet
	cfg.ArchGiven = cli.Set(fs)["arch"]
	// Validate resolves an empty -metric: the flag, bound to cfg.Metric, is recorded resolved.
	if err := cfg.Validate(); err != nil {
		return check.Flag(err) // the library names a setting, the command its flag
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	cfg.Data, cfg.Args = d, cli.Args(fs)
	_, err = pretrain.Train(context.Background(), *cfg)
	return check.Flag(err)
}
