package refiner

import (
	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/retrieve"
)

// Kind is the model kind of a refiner run (rundir.Meta.Kind).
const Kind = "refiner"

func init() {
	// A refiner run ranks with its recorded first stage followed by the refiner.
	kinds.Register(kinds.Kind{Name: Kind, ConfigFile: ConfigFile,
		Rank: func(dir string, be compute.Backend, d *data.Dataset) (retrieve.Ranker, error) {
			return LoadPipeline(dir, d, be)
		}})
}
