package colt

import (
	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/rank"
)

// Kind is the model kind of a COLT run (rundir.Meta.Kind).
const Kind = "colt"

func init() {
	newConfig, train := kinds.Typed(Kind, DefaultTrainConfig, Train, func(r *Result) *kinds.Result {
		return &kinds.Result{RunDir: r.RunDir, Summary: r.Summary, Test: r.Test}
	})
	// A COLT run ranks with its recorded stage-1 bi-encoder and its trained graph stage
	// (colt.json is kept in the checkpoints only).
	kinds.Register(kinds.Kind{Name: Kind, Help: "COLT's LightGCN graph stage on a trained bi-encoder (-first-stage RUN)",
		ConfigFile: ConfigFile, NewConfig: newConfig, Train: train,
		Rank: func(dir string, be compute.Backend, d *data.Dataset) (rank.Ranker, error) {
			return LoadRun(dir, d, be)
		}})
}
