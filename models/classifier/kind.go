package classifier

import (
	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/retrieve"
)

// Kind is the model kind of a classifier run (rundir.Meta.Kind): a query-type or an MLC
// classifier.
const Kind = "classifier"

func init() {
	kinds.Register(kinds.Kind{Name: Kind, ConfigFile: ConfigFile,
		Rank: func(dir string, be compute.Backend, d *data.Dataset) (retrieve.Ranker, error) {
			m, err := LoadRun(dir, be)
			if err != nil {
				return nil, err
			}
			return NewRanker(m, d)
		}})
}
