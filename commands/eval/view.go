package evalcmd

import (
	"fmt"
	"os"
	"strings"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/rundir"
)

// runDirs returns the trained runs the options name, in the order that picks the dev split
// and the held-out-tool view: -run, -first-stage, then the run:RUN entries of -runs.
func runDirs(o *options) []string {
	var out []string
	for _, d := range []string{o.run, o.rr.retriever} {
		if d != "" {
			out = append(out, d)
		}
	}
	var items []string
	if o.method == "fusion" {
		items = splitRuns(o.fu.runs)
	}
	for _, it := range append(items, splitRuns(o.compare)...) {
		if dir, ok := strings.CutPrefix(it, "run:"); ok && dir != "" {
			out = append(out, dir)
		}
	}
	return out
}

// loadData loads -data as the held-out-tool view -holdout-tools gives; without
// -holdout-tools, as the view the first of runDirs was trained on (none: the dataset's own
// splits). Every run of runDirs with a run description must have been trained on that view.
func loadData(o *options) (*data.Dataset, error) {
	h := o.holdout
	if !o.holdoutGiven {
		for _, dir := range runDirs(o) {
			if rh := cli.RecordedHoldout(dir); rh != nil {
				h = rh
				fmt.Fprintf(os.Stderr, "eval: %s was trained on the held-out-tool view %s: evaluating on that view\n", dir, rh.Flags())
				break
			}
		}
	}
	d, err := data.OpenView(o.data, h)
	if err != nil {
		if h != nil {
			return nil, fmt.Errorf("%s: %w", h.Flags(), err)
		}
		return nil, err
	}
	for _, dir := range runDirs(o) {
		m, err := rundir.Read(rundir.RunOf(dir))
		if err != nil {
			continue // the method that loads the run reports it
		}
		if err := m.CheckView(d); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	return d, nil
}

// isDevSplit reports whether -split names the dev split a trained run recorded (dev, when the
// dataset has no split of that name).
func isDevSplit(o *options, d *data.Dataset) bool {
	_, named := d.Splits[o.split]
	return o.split == "dev" && !named
}

// evalSplit returns the split -split names: a dataset split, or the recorded dev split.
func evalSplit(o *options, d *data.Dataset) (*data.Split, error) {
	if isDevSplit(o, d) {
		_, dev, _, err := devSplit(o, d)
		return dev, err
	}
	s, err := d.Split(o.split)
	if err != nil {
		return nil, fmt.Errorf("-split: %w", err)
	}
	return s, nil
}

// devSplit returns the (train, dev) split recorded by the first run of runDirs, and its
// description.
func devSplit(o *options, d *data.Dataset) (train, dev *data.Split, m *rundir.Meta, err error) {
	dirs := runDirs(o)
	if len(dirs) == 0 {
		return nil, nil, nil, fmt.Errorf("the dev split is the one a trained run recorded: give -run, -first-stage, or a run:RUN in -runs")
	}
	train, dev, m, err = rundir.Splits(rundir.RunOf(dirs[0]), d)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("dev split of %s: %w", dirs[0], err)
	}
	return train, dev, m, nil
}
