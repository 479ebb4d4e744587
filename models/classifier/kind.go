package classifier

import (
	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/rank"
)

// Kind is the model kind of a classifier run (rundir.Meta.Kind): a query-type or an MLC
// classifier.
const Kind = "classifier"

func init() {
	newConfig, train := kinds.Typed(Kind, DefaultTrainConfig, Train, func(r *Result) *kinds.Result {
		return &kinds.Result{RunDir: r.RunDir, Summary: r.Summary, Test: kinds.TestReport(r.Test)}
	})
	kinds.Register(kinds.Kind{Name: Kind, Help: "query-type or multi-label (MLC) tool classifier",
		ConfigFile: ConfigFile, NewConfig: newConfig, Train: train,
		Rank: func(dir string, be compute.Backend, d *data.Dataset) (rank.Ranker, error) {
			m, err := LoadRun(dir, be)
			if err != nil {
				return nil, err
			}
			return NewRanker(m, d)
		}})
}
