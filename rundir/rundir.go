// Package rundir is the one place that writes and reads a run directory: what kind of model
// the run trains, the data it was trained on (fingerprint), the dev split it selects on
// (fraction, seed and the query ids themselves), the run it derives from, and every argument
// of the command that made it. Later stages read their parent's split from here, so a
// cross-encoder, a classifier, COLT or a rerank grid never tunes on a stage-1 training query.
//
// Layout of a run directory:
//
//	run.json              Meta (this package)
//	train_config.json     the trainer's configuration (train.Config)
//	<kind config>.json    the model configuration (biencoder.json, crossencoder.json, ...)
//	tokenizer files       tokenizer.json, vocab.txt, tokenizer_config.json
//	checkpoints/step-N/   checkpoints (package checkpoints)
//	metrics.jsonl         one record per optimizer step, dev metrics at evaluations
//	plot.html             the training plot: loss, dev metrics, lr, best checkpoint (train.PlotRuns)
//	summary.json          the end-of-training summary
//	test_metrics.json     the end-of-training test report, when a test split is evaluated
//
// Every write is atomic (temporary file, fsync, rename) and checked.
package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/atomicfile"
	"github.com/toolret/toolret/internal/jsonfile"
)

// MetaFile is the name of the run description in a run directory.
const MetaFile = "run.json"

// Format is the version of MetaFile this package writes. Format 2 added Config, the run's
// typed configuration; a format-1 run has only Args, from which each model kind rebuilds its
// typed configuration (its registered migration, e.g. biencoder.ConfigFromArgs).
const Format = 2

// Split records how a run's dev split was carved from a training split.
type Split struct {
	// From is the dataset split the dev queries were carved from (normally "train").
	From        string  `json:"from"`
	DevFraction float64 `json:"dev_fraction"`
	Seed        int64   `json:"seed"`
	// DevIDs are the dataset's ids of the dev queries, in split order.
	DevIDs []string `json:"dev_query_ids"`
	// Holdout is the held-out-tool view of the data the split was carved from (-holdout-tools,
	// -holdout-seed), nil for the dataset's own splits. On a view the dev queries are those
	// that need one of DevFraction of the training tools (data.Dataset.CarveDevTools).
	Holdout *data.Holdout `json:"holdout_tools,omitempty"`
}

// Meta describes a run directory.
type Meta struct {
	Format int `json:"format"`
	// Kind is the model kind: biencoder, crossencoder, classifier, colt.
	Kind string `json:"kind"`
	// Dataset and Fingerprint identify the data the run was trained on.
	Dataset     string `json:"dataset"`
	Fingerprint string `json:"data_fingerprint"`
	Split       Split  `json:"split"`
	// Parent is the run this one derives from (a stage-1 retriever), or empty.
	Parent string `json:"parent,omitempty"`
	// Config is the run's typed configuration (format 2), the JSON of its kind's training
	// configuration (e.g. biencoder.TrainConfig: sections "split", "parent", "model" and
	// "training") whose keys are the command's flag names but for a few older spellings
	// (retriever, COLT's list_len); every kind records its own (Record);
	// empty for a format-1 run, and for a run made before its kind recorded one.
	Config json.RawMessage `json:"config,omitempty"`
	// Args are the values of every flag of the command that made the run. Kept in format 2
	// as provenance, for the migration of runs without Config (ConfigFromArgs) and for the
	// commands' -resume, which takes the flags outside the configuration (-data) from them; a
	// run made by a Go caller records its Config's flags (ConfigArgs).
	Args    map[string]string `json:"args,omitempty"`
	Created string            `json:"created,omitempty"`
}

// ErrNoMeta is returned by Read for a directory without MetaFile.
var ErrNoMeta = errors.New("no " + MetaFile)

// Carve splits the judged queries of d's split from into (train, dev) with frac and seed and
// returns the split's record with them.
func Carve(d *data.Dataset, from string, frac float64, seed int64) (Split, *data.Split, *data.Split, error) {
	train, dev, err := d.CarveDev(from, frac, seed)
	if err != nil {
		return Split{}, nil, nil, err
	}
	s := Split{From: from, DevFraction: frac, Seed: seed, DevIDs: make([]string, len(dev.Queries)), Holdout: d.Holdout}
	for i, q := range dev.Queries {
		s.DevIDs[i] = d.Queries[q].ID
	}
	return s, train, dev, nil
}

// Apply rebuilds the (train, dev) splits of d that s records: dev holds exactly the recorded
// query ids (an id d does not have, or one not judged in s.From, is an error), train the rest
// of s.From's judged queries.
func (s Split) Apply(d *data.Dataset) (train, dev *data.Split, err error) {
	if err := checkView(s.Holdout, d); err != nil {
		return nil, nil, fmt.Errorf("dev split: %w", err)
	}
	src, err := d.Split(s.From)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[string]int, len(d.Queries))
	for i, q := range d.Queries {
		byID[q.ID] = i
	}
	isDev := make(map[int]bool, len(s.DevIDs))
	for _, id := range s.DevIDs {
		q, ok := byID[id]
		if !ok {
			return nil, nil, fmt.Errorf("dev split: query id %q is not in dataset %s", id, d.Name)
		}
		if len(src.Relevant[q]) == 0 {
			return nil, nil, fmt.Errorf("dev split: query id %q has no relevant tool in split %q of dataset %s", id, s.From, d.Name)
		}
		isDev[q] = true
	}
	if len(isDev) == 0 {
		return nil, nil, fmt.Errorf("dev split of %s: no dev query recorded", d.Name)
	}
	train, dev = src.Divide(func(q int) bool { return isDev[q] })
	return train, dev, nil
}

// Splits returns the (train, dev) splits the run at dir was trained and selected on, after
// checking that d is the data it was trained on.
func Splits(dir string, d *data.Dataset) (train, dev *data.Split, m *Meta, err error) {
	if m, err = Read(dir); err != nil {
		return nil, nil, nil, err
	}
	if err := m.CheckData(d); err != nil {
		return nil, nil, nil, err
	}
	train, dev, err = m.Split.Apply(d)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("run %s: %w", dir, err)
	}
	return train, dev, m, nil
}

// CheckData reports an error when d is not the data the run was trained on; a held-out-tool
// view and the dataset's own splits (or two different views) are told apart by name.
func (m *Meta) CheckData(d *data.Dataset) error {
	if err := checkView(m.Split.Holdout, d); err != nil {
		return fmt.Errorf("run was trained on dataset %s: %w", m.Dataset, err)
	}
	if fp := d.Fingerprint(); m.Fingerprint != "" && fp != m.Fingerprint {
		return fmt.Errorf("run was trained on other data (dataset %s, fingerprint %.12s; this data: %s, %.12s)", m.Dataset, m.Fingerprint, d.Name, fp)
	}
	return nil
}

// CheckView reports an error unless d is the held-out-tool view the run's split was carved on
// (nil: the dataset's own splits), naming the flags that give it. Unlike CheckData it accepts
// other data: a run may be evaluated on another dataset, not on another view of its own.
func (m *Meta) CheckView(d *data.Dataset) error {
	if err := checkView(m.Split.Holdout, d); err != nil {
		return fmt.Errorf("run was trained on dataset %s: %w", m.Dataset, err)
	}
	return nil
}

// checkView reports an error unless d is the held-out-tool view h (nil: the dataset's own
// splits), naming the flags that give the recorded one.
func checkView(h *data.Holdout, d *data.Dataset) error {
	if h == nil && d.Holdout == nil || h != nil && d.Holdout != nil && *h == *d.Holdout {
		return nil
	}
	if h == nil {
		return fmt.Errorf("recorded on the dataset's own splits; this data (%s) is the held-out-tool view %s: omit -holdout-tools", d.Name, d.Holdout.Flags())
	}
	is := "the dataset's own splits"
	if d.Holdout != nil {
		is = "the held-out-tool view " + d.Holdout.Flags()
	}
	return fmt.Errorf("recorded on the held-out-tool view %s; this data (%s) is %s: give %s", h.Flags(), d.Name, is, h.Flags())
}

// Create writes m to dir/MetaFile (creating dir), filling Format and Created.
func Create(dir string, m *Meta) error {
	m.Format = Format
	if m.Created == "" {
		m.Created = time.Now().UTC().Format(time.RFC3339)
	}
	return WriteJSON(dir, MetaFile, m)
}

// Read reads dir/MetaFile. A run directory made before run.json existed gives an error that
// says how to migrate it.
func Read(dir string) (*Meta, error) {
	p := filepath.Join(dir, MetaFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		if _, err2 := os.Stat(dir); err2 != nil {
			return nil, fmt.Errorf("run %s: %w", dir, err2)
		}
		return nil, fmt.Errorf("run %s: %w (made before toolret recorded dev splits): run `train migrate -run %s -data DIR -dev FRACTION -seed SEED` with the -dev and -seed it was trained with: %w",
			dir, ErrNoMeta, dir, ErrNoMeta)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if m.Format < 1 || m.Format > Format {
		return nil, fmt.Errorf("%s: format %d: this toolret reads formats 1..%d", p, m.Format, Format)
	}
	if m.Kind == "" {
		return nil, fmt.Errorf("%s: no kind", p)
	}
	return &m, nil
}

// WriteJSON writes v as indented JSON to dir/name, atomically (jsonfile.Write).
func WriteJSON(dir, name string, v any) error { return jsonfile.Write(filepath.Join(dir, name), v) }

// WriteFile writes b to path atomically: a temporary file in the same directory, synced,
// then renamed over path. The directory is created if needed.
func WriteFile(path string, b []byte) error { return atomicfile.Write(path, b) }

// DefaultDev is the fraction of the training queries carved as the dev split (Carve) when a
// configuration leaves it to the default: every command's -dev.
const DefaultDev = 0.1

// DefaultSeed is the random seed of a configuration left to the default: every command's -seed.
const DefaultSeed = 1

// RecordedHoldout returns the held-out-tool view the run at dir (or its checkpoint) was
// trained on, nil for none or when dir has no readable run description (the caller's own
// checks report that).
func RecordedHoldout(dir string) *data.Holdout {
	if dir == "" {
		return nil
	}
	m, err := Read(RunOf(dir))
	if err != nil {
		return nil
	}
	return m.Split.Holdout
}

// RunOf returns the run directory of path: path itself, or the run a checkpoint directory
// (RUN/checkpoints/step-N) belongs to.
func RunOf(path string) string {
	if _, err := os.Stat(filepath.Join(path, MetaFile)); err != nil {
		if _, err := os.Stat(filepath.Join(path, "state.json")); err == nil && filepath.Base(filepath.Dir(path)) == "checkpoints" {
			return filepath.Dir(filepath.Dir(path))
		}
	}
	return path
}
