package evalcmd

import (
	"os"
	"path/filepath"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/colt"
	"github.com/toolret/toolret/models/refiner"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/rundir"
)

// runLoaders maps a configuration file found in a run directory, or in its best checkpoint (or
// the checkpoint given), to the loader of that kind of run as a ranker; bi-encoder runs
// (biencoder.json) are the fallback.
var runLoaders = map[string]func(dir string, be compute.Backend, d *data.Dataset) (retrieve.Ranker, error){
	classifier.ConfigFile: func(dir string, be compute.Backend, d *data.Dataset) (retrieve.Ranker, error) {
		m, err := classifier.LoadRun(dir, be)
		if err != nil {
			return nil, err
		}
		return classifier.NewRanker(m, d)
	},
	// A refiner run ranks with its recorded first stage followed by the refiner.
	refiner.ConfigFile: func(dir string, be compute.Backend, d *data.Dataset) (retrieve.Ranker, error) {
		return refiner.LoadPipeline(dir, d, be)
	},
	// A COLT run ranks with its recorded stage-1 bi-encoder and its trained graph stage
	// (colt.json is kept in the checkpoints only).
	colt.ConfigFile: func(dir string, be compute.Backend, d *data.Dataset) (retrieve.Ranker, error) {
		return colt.LoadRun(dir, d, be)
	},
}

// runLoader returns the loader for the kind of run in dir, or nil.
func runLoader(dir string) func(string, compute.Backend, *data.Dataset) (retrieve.Ranker, error) {
	dirs := []string{dir}
	if c, err := rundir.CheckpointDir(dir); err == nil && c != dir {
		dirs = append(dirs, c)
	}
	for _, d := range dirs {
		for file, l := range runLoaders {
			if _, err := os.Stat(filepath.Join(d, file)); err == nil {
				return l
			}
		}
	}
	return nil
}
