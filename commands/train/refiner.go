package traincmd

import (
	"context"
	"flag"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/refiner"
)

// refinerCmd is `train refiner`: the flags of refiner.TrainConfig.
func refinerCmd(args []string) error {
	fs := flag.NewFlagSet("train refiner", flag.ContinueOnError)
	def := refiner.DefaultTrainConfig()
	src := fs.String("candidates", def.Candidates, "first stage whose top N the refiner re-orders: bi-encoder (the -first-stage run's text vectors), usage (its Tool2Vec vectors), mlc (-candidates-run MLC_RUN) or bm25")
	srcRun := fs.String("candidates-run", def.CandidatesRun, "the first stage's run for -candidates mlc (bi-encoder and usage: the -first-stage run)")
	n := fs.Int("n", def.N, "candidate slots N: the first stage's top N are scored together")
	depth := fs.Int("depth", def.Depth, "first-stage list length cached per query (>= -n; the refined top N is followed by the rest in first-stage order)")
	loss := fs.String("loss", def.Loss, "softmax (multi-positive softmax over the N slots, summed over positives), softmax-norm (divided by the positives) or bce (per slot)")
	missing := fs.String("missing", def.Missing, "training lists without a positive the first stage missed: insert (at a random slot) or drop (train on the list as is)")
	order := fs.String("order", def.Order, "training slot order: shuffle (each epoch) or rank (first-stage order)")
	slotPos := fs.String("slot-positions", def.SlotPositions, "slot position embeddings: none or learned (a [N, hidden] table added to slot i)")
	weight := fs.Float64("first-stage-weight", def.FirstStageWeight, "rank the top N by (1-w)·z(refiner) + w·z(first stage); -1: choose w in {0, 0.1, ..., 1} on dev after training (0: the refiner alone)")
	// The Tool2Vec paper's code: AdamW lr 8e-4, weight decay 0.01, warm-up then cosine.
	h := addHeadFlags(fs, def.Head)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	// start first: a resumed run takes its recorded flags before they are checked.
	if err := h.start("refiner", "refiner"); err != nil {
		return err
	}
	cfg := refiner.TrainConfig{Head: h.config(), Candidates: *src, CandidatesRun: *srcRun, N: *n, Depth: *depth, Loss: *loss,
		Missing: *missing, Order: *order, SlotPositions: *slotPos, FirstStageWeight: *weight}
	if err := cfg.Validate(); err != nil {
		return check.Flag(err) // the library names a setting, the command its flag
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	cfg.Data, cfg.Args = d, cli.Args(fs)
	_, err = refiner.Train(context.Background(), cfg)
	return check.Flag(err)
}
