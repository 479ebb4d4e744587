package traincmd

import (
	"context"
	"flag"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/refiner"
)

// refinerFlags returns train refiner's flags and the configuration they write: one flag per
// field of refiner.TrainConfig, its value in DefaultTrainConfig as the default (the Tool2Vec
// paper's code: AdamW lr 8e-4, weight decay 0.01, warm-up then cosine), and the operational
// flags (headFlags).
func refinerFlags() (*flag.FlagSet, *refiner.TrainConfig, headOps, error) {
	cfg := refiner.DefaultTrainConfig()
	fs, op, err := headFlags("refiner", "refiner", &cfg)
	return fs, &cfg, op, err
}

// refinerCmd is `train refiner`: the flags of refiner.TrainConfig.
func refinerCmd(args []string) error {
	fs, cfg, op, err := refinerFlags()
	if err != nil {
		return err
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	// start first: a resumed run takes its recorded flags before they are checked.
	if err := startHead(fs, op, cfg, &cfg.Head, "refiner", "refiner"); err != nil {
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
	_, err = refiner.Train(context.Background(), *cfg)
	return check.Flag(err)
}
