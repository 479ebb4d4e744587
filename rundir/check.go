package rundir

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/data"
)

// CheckDev reports an error unless the run at path was trained on d and held out every dev
// query of dev (a first stage's recorded split), so that tuning on dev never sees one of
// the run's training queries. label names the run in the errors (a flag such as
// "-reranker"): "label: ..." when its run.json cannot be read, "label path: ..." otherwise.
func CheckDev(label, path string, d *data.Dataset, dev Split) error {
	m, err := Read(RunOf(path))
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	if err := m.CheckData(d); err != nil {
		return fmt.Errorf("%s %s: %w", label, path, err)
	}
	held := make(map[string]bool, len(m.Split.DevIDs))
	for _, id := range m.Split.DevIDs {
		held[id] = true
	}
	trained := 0
	for _, id := range dev.DevIDs {
		if !held[id] {
			trained++
		}
	}
	if m.Split.From != dev.From || trained > 0 {
		return fmt.Errorf("%s %s: %d of the -first-stage run's %d dev queries are training queries of this run (its dev split: %q fraction %v seed %d; the retriever's: %q fraction %v seed %d); train it with -first-stage so that it takes the retriever's dev split",
			label, path, trained, len(dev.DevIDs), m.Split.From, m.Split.DevFraction, m.Split.Seed, dev.From, dev.DevFraction, dev.Seed)
	}
	return nil
}

// FindConfig returns the path of the first of files (model configuration files such as
// biencoder.json) found in the run directory or checkpoint at path, else in its best
// checkpoint: what tells the kind of a run. ok is false when none is there.
func FindConfig(path string, files ...string) (file string, ok bool) {
	dirs := []string{path}
	if c, err := CheckpointDir(path); err == nil && c != path {
		dirs = append(dirs, c)
	}
	for _, dir := range dirs {
		for _, f := range files {
			p := filepath.Join(dir, f)
			if _, err := os.Stat(p); err == nil {
				return p, true
			}
		}
	}
	return "", false
}
