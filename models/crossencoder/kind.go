package crossencoder

import "github.com/toolret/toolret/kinds"

// Kind is the model kind of a cross-encoder run (rundir.Meta.Kind). It reranks a first
// stage's candidates: it does not rank tools on its own.
const Kind = "crossencoder"

func init() {
	newConfig, train := kinds.Typed(Kind, DefaultTrainConfig, Train, func(r *Result) *kinds.Result {
		return &kinds.Result{RunDir: r.RunDir, Summary: r.Summary, Test: kinds.TestReport(r.Test)}
	})
	kinds.Register(kinds.Kind{Name: Kind, Help: "ToolRerank's cross-encoder reranker over a stage-1 run (-first-stage RUN)",
		ConfigFile: ConfigFile, NewConfig: newConfig, Train: train})
}
