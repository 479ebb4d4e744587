package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/data"
)

// TrainingPart returns the training part of the run at path (a run directory, or one of its
// checkpoint directories) over d, whose judged queries define an index's usage vectors: the
// run's training split without its recorded dev queries (Splits). When there is none it
// returns nil and the reason, to be shown as a note: a run without MetaFile (made before
// toolret recorded splits) or d other than the data the run was trained on.
func TrainingPart(path string, d *data.Dataset) (*data.Split, string, error) {
	dir := path
	if _, err := os.Stat(filepath.Join(dir, MetaFile)); err != nil {
		// A checkpoint directory: RUN/checkpoints/step-N.
		if up := filepath.Dir(filepath.Dir(filepath.Clean(path))); up != dir {
			if _, err := os.Stat(filepath.Join(up, MetaFile)); err == nil {
				dir = up
			}
		}
	}
	m, err := Read(dir)
	if errors.Is(err, ErrNoMeta) {
		return nil, fmt.Sprintf("no usage vectors: run %s has no %s (made before toolret recorded dev splits; see train migrate)", path, MetaFile), nil
	}
	if err != nil {
		return nil, "", err
	}
	if err := m.CheckData(d); err != nil {
		return nil, fmt.Sprintf("no usage vectors: the indexed data is not the run's training data (%v)", err), nil
	}
	train, _, _, err := Splits(dir, d)
	if err != nil {
		return nil, "", err
	}
	return train, "", nil
}
