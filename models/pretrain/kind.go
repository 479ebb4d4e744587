package pretrain

import "github.com/toolret/toolret/kinds"

// Kind is the model kind of a pre-training run (rundir.Meta.Kind). Its runs hold their
// encoder as a bi-encoder too (biencoder.json), which ranks, evaluates and exports for it.
const Kind = "pretrain"

func init() {
	newConfig, train := kinds.Typed(Kind, DefaultTrainConfig, Train, func(r *Result) *kinds.Result {
		return &kinds.Result{RunDir: r.RunDir, Summary: r.Summary}
	})
	kinds.Register(kinds.Kind{Name: Kind, Help: "unsupervised MLM + contrastive pre-training on the tool corpus",
		ConfigFile: ConfigFile, Base: "biencoder", NewConfig: newConfig, Train: train})
}
