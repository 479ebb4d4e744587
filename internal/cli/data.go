package cli

import (
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/rundir"
)

// Holdout registers -holdout-tools and -holdout-seed, the held-out-tool view of the dataset
// (data.Dataset.HoldoutTools). Data registers them with -data.
func Holdout(fs *flag.FlagSet) (frac *float64, seed *uint64) {
	frac = fs.Float64("holdout-tools", 0, "hold out this fraction of the judged tools (seeded by -holdout-seed) to evaluate on tools never seen in training: "+
		"every query that needs a held-out tool is a test query, the others train (a multi-tool query with any held-out tool goes to test, its seen tools stay relevant there); "+
		"the dev split is then carved the same way from the training tools (-dev of them); 0: the dataset's own splits. "+
		"A later stage given a -first-stage run trained on a view takes the run's view")
	seed = fs.Uint64("holdout-seed", DefaultSeed, "random seed of -holdout-tools")
	return frac, seed
}

// HoldoutOf returns the held-out-tool view fs's -holdout-tools and -holdout-seed name (nil:
// none, or fs has no such flags), checking -holdout-tools is in [0, 1).
func HoldoutOf(fs *flag.FlagSet) (*data.Holdout, error) {
	f, s := fs.Lookup("holdout-tools"), fs.Lookup("holdout-seed")
	if f == nil || s == nil {
		return nil, nil
	}
	frac, err := strconv.ParseFloat(f.Value.String(), 64)
	if err != nil {
		return nil, fmt.Errorf("-holdout-tools %q: %w", f.Value, err)
	}
	seed, err := strconv.ParseUint(s.Value.String(), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("-holdout-seed %q: %w", s.Value, err)
	}
	return MakeHoldout(frac, seed)
}

// MakeHoldout validates -holdout-tools frac and -holdout-seed seed: nil for frac 0
// (data.NewHoldout, its error worded as the flag).
func MakeHoldout(frac float64, seed uint64) (*data.Holdout, error) {
	h, err := data.NewHoldout(frac, seed)
	return h, check.Flag(err)
}

// RecordedHoldout returns the held-out-tool view the run at dir (or its checkpoint) was
// trained on (rundir.RecordedHoldout).
func RecordedHoldout(dir string) *data.Holdout { return rundir.RecordedHoldout(dir) }

// LoadData loads the dataset fs's -data names (the embedded default when empty), as the
// held-out-tool view -holdout-tools and -holdout-seed name. When -holdout-tools is not given
// and fs has a -first-stage run trained on a view, that view is taken and recorded in fs's
// flags, so a later stage evaluates and tunes on its retriever's data.
func LoadData(fs *flag.FlagSet) (*data.Dataset, error) { return loadData(fs, false) }

// LoadSources is LoadData for a kind that trains on several libraries at once (train
// crossencoder): -data may also be a list of sources ("toollens:1,toolmix:1",
// data.OpenSources), opened as a multi-source dataset (data.Dataset.Libraries).
func LoadSources(fs *flag.FlagSet) (*data.Dataset, error) { return loadData(fs, true) }

func loadData(fs *flag.FlagSet, lists bool) (*data.Dataset, error) {
	dir := ""
	if f := fs.Lookup("data"); f != nil {
		dir = f.Value.String()
	}
	h, err := HoldoutOf(fs)
	if err != nil {
		return nil, err
	}
	if r := fs.Lookup("first-stage"); h == nil && r != nil && !Set(fs)["holdout-tools"] {
		if h = RecordedHoldout(r.Value.String()); h != nil {
			if err := errors.Join(fs.Set("holdout-tools", strconv.FormatFloat(h.Fraction, 'g', -1, 64)),
				fs.Set("holdout-seed", strconv.FormatUint(uint64(h.Seed), 10))); err != nil {
				return nil, fmt.Errorf("-first-stage %s: its held-out-tool view %s: %w", r.Value, h.Flags(), err)
			}
		}
	}
	if data.IsSourceList(dir) {
		if !lists {
			return nil, fmt.Errorf("-data %q: a list of sources is for train biencoder and train crossencoder (each batch from one library); this kind trains on one dataset", dir)
		}
		return data.OpenView(dir, h)
	}
	d, err := data.Open(dir, h)
	if err != nil && h != nil {
		return nil, fmt.Errorf("%s: %w", h.Flags(), err)
	}
	return d, err
}
