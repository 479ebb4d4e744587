package refiner

import (
	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/rank"
)

// Kind is the model kind of a refiner run (rundir.Meta.Kind).
const Kind = "refiner"

func init() {
	newConfig, train := kinds.Typed(Kind, DefaultTrainConfig, Train, func(r *Result) *kinds.Result {
		return &kinds.Result{RunDir: r.RunDir, Summary: r.Summary, Test: r.Test}
	})
	// A refiner run ranks with its recorded first stage followed by the refiner.
	kinds.Register(kinds.Kind{Name: Kind, Help: "the Tool2Vec paper's ToolRefiner over a stage-1 run's candidates",
		ConfigFile: ConfigFile, NewConfig: newConfig, Train: train,
		Rank: func(dir string, be compute.Backend, d *data.Dataset) (rank.Ranker, error) {
			return LoadPipeline(dir, d, be)
		}})
}
