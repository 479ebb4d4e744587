// Package recipe holds the training recipes of toolret's model kinds that sit above the
// model packages (a recipe that reads feedback collections or pre-trained hub models cannot
// live in package biencoder without an import cycle): BiEncoder trains a bi-encoder from a
// biencoder.TrainConfig, and registers itself as the bi-encoder kind's Train (package kinds).
package recipe

import (
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/models/biencoder"
)

func init() {
	_, train := kinds.Typed(biencoder.Kind, biencoder.DefaultTrainConfig, BiEncoder, func(r *BiEncoderResult) *kinds.Result {
		return &kinds.Result{RunDir: r.RunDir, Config: &r.Config, Summary: r.Summary, Test: r.Test}
	})
	kinds.Register(kinds.Kind{Name: biencoder.Kind, Train: train}) // NewConfig: package biencoder's
}
