package traincmd

import (
	"context"
	"flag"
	"fmt"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/biencoder"
)

// mineCmd is `train mine`, the flags of biencoder.MineConfig: it ranks every training query
// with a trained retriever and keeps, per query, the tools at ranks [skip, skip+k) that are
// not relevant: hard negatives for the next training round.
func mineCmd(args []string) error {
	fs := flag.NewFlagSet("train mine", flag.ContinueOnError)
	def := biencoder.DefaultMineConfig()
	cli.Data(fs)
	run := cli.Run(fs, "trained bi-encoder run (or checkpoint) directory")
	split := fs.String("split", def.Split, "split whose queries get negatives")
	perQuery := fs.Int("per-query", def.PerQuery, "negatives kept per query")
	skip := fs.Int("skip", def.Skip, "ignore the top-ranked non-relevant tools (possible unlabelled positives)")
	out := fs.String("out", def.Out, "output file (default RUN/negatives-<split>.jsonl)")
	be := cli.Backend(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg := biencoder.MineConfig{Run: *run, Split: *split, PerQuery: *perQuery, Skip: *skip, Out: *out, Backend: *be}
	if err := cfg.Validate(); err != nil {
		return check.Flag(err)
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	cfg.Data = d
	_, err = biencoder.Mine(context.Background(), cfg)
	return check.Flag(err)
}
