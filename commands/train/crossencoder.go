package traincmd

import (
	"context"
	"flag"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/crossencoder"
)

// crossencoderCmd is `train crossencoder`: the flags of crossencoder.TrainConfig.
func crossencoderCmd(args []string) error {
	fs := flag.NewFlagSet("train crossencoder", flag.ContinueOnError)
	def := crossencoder.DefaultTrainConfig()
	// A cross-encoder started from random weights learns no query-tool matching in these
	// budgets (its loss stays at the prior's for thousands of steps): it warm-starts from the
	// retriever's encoder (def.WarmStart) unless -warm-start=false, -init or a from-scratch
	// size is given.
	h := addHeadFlags(fs, def.Head)
	m := fs.Int("depth", def.Depth, "hard negatives are drawn from the retriever's top -depth tools (also the dev reranking depth; the paper's m)")
	negs := fs.Int("negatives-per-positive", def.Negatives, "negatives per positive pair")
	loss := fs.String("loss", def.Loss, "listwise (softmax CE over the positive and its negatives) or bce (per pair)")
	devMax := fs.Int("dev-max", def.DevMax, "evaluate on at most this many dev queries during training (0: all)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	h.defaultWarm()
	if err := h.start("crossencoder", "crossencoder"); err != nil {
		return err
	}
	cfg := crossencoder.TrainConfig{Head: h.config(), Depth: *m, Negatives: *negs, Loss: *loss, DevMax: *devMax}
	if err := cfg.Validate(); err != nil {
		return check.Flag(err) // the library names a setting, the command its flag
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	cfg.Data, cfg.Args = d, cli.Args(fs)
	_, err = crossencoder.Train(context.Background(), cfg)
	return check.Flag(err)
}
