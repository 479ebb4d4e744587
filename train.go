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
// DefaultTrainConfig, or NewConfig(kind), gives the defaults. A new run records the
// configuration in its run.json. With the configuration's Resume set, Train continues the run
// at its RunDir from its newest checkpoint: the configuration must be the run's (RunConfig
// returns it), an error naming every field that differs ("resume DIR: refused, the
// configuration differs from the run's: lr 0.001 != recorded 0.0005"); the operational fields
// (tagged json:"-": RunDir, Backend, Devices, Quiet, writers, ...) may change. A kind without
// a library recipe yet returns an error naming the command that trains it.
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

// RunConfig returns the typed configuration the run at dir trained with, a pointer to its
// kind's type (as NewConfig returns): its run.json's, or for a run made before run.json
// recorded one, its recorded flags migrated. Its operational fields are zero: set RunDir and
// Resume to continue the run with Train, after changing what may change.
func RunConfig(dir string) (any, error) {
	return kinds.Config(dir)
}
