package traincmd

import (
	"context"
	"flag"
	"fmt"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/colt"
)

// coltFlags returns train colt's flags and the configuration they write: one flag per field
// of colt.TrainConfig (flagcfg.Bind: its value in DefaultTrainConfig as the default), -data
// with its -holdout-tools and -holdout-seed, and the operational -run, -resume, -backend,
// -devices and -quiet.
func coltFlags() (*flag.FlagSet, *colt.TrainConfig, headOps, error) {
	cfg := colt.DefaultTrainConfig()
	fs, op, err := headFlags("colt", "colt", &cfg)
	return fs, &cfg, op, err
}

// coltCmd is `train colt`: the flags of colt.TrainConfig. It trains COLT's graph stage on top
// of a trained bi-encoder run (-first-stage), on that run's recorded training split, selecting
// on its recorded dev split.
func coltCmd(args []string) error {
	fs, cfg, op, err := coltFlags()
	if err != nil {
		return err
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if _, err := openRun(fs, op.run, *op.resume, "colt", "colt", "COLT", cfg); err != nil {
		return err
	}
	cfg.RunDir, cfg.Resume, cfg.Backend, cfg.Devices, cfg.Quiet = *op.run, *op.resume, *op.backend, *op.devices, *op.quiet
	if err := cfg.Validate(); err != nil {
		return check.Flag(err) // the library names a setting, the command its flag
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	cfg.Data, cfg.Args = d, cli.Args(fs)
	_, err = colt.Train(context.Background(), *cfg)
	return check.Flag(err)
}
