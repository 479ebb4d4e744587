// Package recipe holds the training recipes of toolret's model kinds that sit above the
// model packages (a recipe that reads feedback collections or pre-trained hub models cannot
// live in package biencoder without an import cycle): BiEncoder trains a bi-encoder from a
// biencoder.TrainConfig, and registers itself as the bi-encoder kind's Train (package kinds).
package recipe

import (
	"context"
	"fmt"

	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/models/biencoder"
)

func init() {
	kinds.Register(kinds.Kind{Name: biencoder.Kind, Train: trainBiEncoder})
}

// trainBiEncoder is BiEncoder for kinds.Train: cfg is a biencoder.TrainConfig or a pointer
// to one.
func trainBiEncoder(ctx context.Context, cfg any) (*kinds.Result, error) {
	var c biencoder.TrainConfig
	switch v := cfg.(type) {
	case biencoder.TrainConfig:
		c = v
	case *biencoder.TrainConfig:
		if v == nil {
			return nil, fmt.Errorf("train %s: nil configuration", biencoder.Kind)
		}
		c = *v
	default:
		return nil, fmt.Errorf("train %s: configuration %T, want biencoder.TrainConfig", biencoder.Kind, cfg)
	}
	r, err := BiEncoder(ctx, c)
	if err != nil {
		return nil, err
	}
	return &kinds.Result{RunDir: r.RunDir, Config: &r.Config, Summary: r.Summary, Test: r.Test}, nil
}
