package toolret

import (
	"context"
	"fmt"

	"github.com/toolret/toolret/kinds"

	_ "github.com/toolret/toolret/kinds/all" // every built-in kind registers itself
)

// Result is what Train returns: the run directory, the configuration it trained with, the
// trainer's summary and the test reports.
type Result = kinds.Result

// Train trains a model of kind ("biencoder", ...; kinds.Names lists them) from its typed
// configuration: a biencoder.TrainConfig (or a pointer to one) for "biencoder", whose
// DefaultTrainConfig, or NewConfig(kind), gives the defaults. A kind without a library
// recipe yet returns an error naming the command that trains it.
func Train(ctx context.Context, kind string, cfg any) (*Result, error) {
	return kinds.Train(ctx, kind, cfg)
}

// NewConfig returns a pointer to kind's typed training configuration holding its defaults
// (*biencoder.TrainConfig for "biencoder").
func NewConfig(kind string) (any, error) {
	k, err := kinds.Lookup(kind)
	if err != nil {
		return nil, err
	}
	if k.NewConfig == nil {
		return nil, fmt.Errorf("kind %s has no typed configuration yet: train it with `toolret train %s`", kind, kind)
	}
	return k.NewConfig(), nil
}
