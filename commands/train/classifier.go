package traincmd

import (
	"context"
	"flag"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/classifier"
)

// classifierFlags returns train classifier's flags and the configuration they write: one
// flag per field of classifier.TrainConfig, its value in DefaultTrainConfig as the default,
// and the operational flags (headFlags).
func classifierFlags() (*flag.FlagSet, *classifier.TrainConfig, headOps, error) {
	cfg := classifier.DefaultTrainConfig()
	fs, op, err := headFlags("classifier", "<kind>", &cfg)
	return fs, &cfg, op, err
}

// classifierCmd is `train classifier`: the flags of classifier.TrainConfig.
func classifierCmd(args []string) error {
	fs, cfg, op, err := classifierFlags()
	if err != nil {
		return err
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	// The kind's defaults, before a resumed run's recorded flags replace them (they are
	// recorded resolved).
	if cfg.Loss == "" {
		cfg.Loss = classifier.DefaultLoss(cfg.Kind)
	}
	if cfg.Metric == "" {
		cfg.Metric = classifier.DefaultMetric(cfg.Kind)
	}
	if err := startHead(fs, op, cfg, &cfg.Head, cfg.Kind, "classifier"); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return check.Flag(err) // the library names a setting, the command its flag
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	cfg.Data, cfg.Args = d, cli.Args(fs)
	_, err = classifier.Train(context.Background(), *cfg)
	return check.Flag(err)
}
