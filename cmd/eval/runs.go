package main

import (
	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/retrieve"

	// The kinds a run may be of register themselves (package kinds).
	_ "github.com/toolret/toolret/models/classifier"
	_ "github.com/toolret/toolret/models/colt"
	_ "github.com/toolret/toolret/models/crossencoder"
	_ "github.com/toolret/toolret/models/pretrain"
	_ "github.com/toolret/toolret/models/refiner"
)

// runLoader returns the loader, as a ranker, of the kind of run in dir or in its best
// checkpoint (the checkpoint given), as package kinds registers it; nil for bi-encoder runs
// (and the kinds that rank as one, pretrain), which buildRunAt loads with -vectors, and for
// kinds that do not rank on their own.
func runLoader(dir string) func(string, compute.Backend, *data.Dataset) (retrieve.Ranker, error) {
	k, err := kinds.Of(dir)
	if err != nil || k.Name == biencoder.Kind || k.Base == biencoder.Kind {
		return nil
	}
	return k.Rank
}
