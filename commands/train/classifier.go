package traincmd

import (
	"context"
	"flag"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/classifier"
)

// classifierCmd is `train classifier`: the flags of classifier.TrainConfig.
func classifierCmd(args []string) error {
	fs := flag.NewFlagSet("train classifier", flag.ContinueOnError)
	def := classifier.DefaultTrainConfig()
	kind := fs.String("kind", def.Kind, "querytype (single- vs multi-tool query) or mlc (multi-label over all tools: a retriever)")
	loss := fs.String("loss", def.Loss, "querytype: ce (2-way softmax, default) or bce (one logit); mlc: bce (per-tool sigmoid, default) or softmax (multi-positive softmax over all tools, the Tool2Vec paper's code)")
	headInit := fs.String("head-init", def.HeadInit, "mlc: the head's initial weights: random (N(0, initializer_range), as HF initialises a new head) or tools (imprinted: each tool's row its text's pooled embedding by the encoder, scaled so logits start at 20 x cosine; pairs with -pooling mean over a sentence encoder)")
	freeze := fs.Bool("freeze-untrained", false, "mlc: the outputs of tools no training query has get no gradient: their rows stay as initialised (with -head-init tools, their texts' embeddings) and the encoder is not trained away from them")
	h := addHeadFlags(fs, def.Head)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	// The kind's defaults, before a resumed run's recorded flags replace them (they are
	// recorded resolved).
	if *loss == "" {
		*loss = classifier.DefaultLoss(*kind)
	}
	if *h.metric == "" {
		*h.metric = classifier.DefaultMetric(*kind)
	}
	if err := h.start(*kind, "classifier"); err != nil {
		return err
	}
	cfg := classifier.TrainConfig{Head: h.config(), Kind: *kind, Loss: *loss, HeadInit: *headInit, FreezeUntrained: *freeze}
	if err := cfg.Validate(); err != nil {
		return check.Flag(err) // the library names a setting, the command its flag
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	cfg.Data, cfg.Args = d, cli.Args(fs)
	_, err = classifier.Train(context.Background(), cfg)
	return check.Flag(err)
}
