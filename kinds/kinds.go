// Package kinds is toolret's registry of model kinds: each kind (bi-encoder, cross-encoder,
// classifier, refiner, COLT, pretrain, ...) registers once, from its own package, what the
// commands and the library dispatch on: its name (run.json's kind), the model configuration
// file that identifies its runs and checkpoints, its typed training configuration with the
// migration of format-1 runs' flags, its training recipe where a library one exists, and how
// a trained run opens as a ranker, its `toolret train NAME` command and help line, and how
// its models export (formats, role as an index's first stage, loader). The commands and the
// library dispatch over the registered names: `toolret train` runs a kind's Command, package
// export loads and gates by its Export facet.
//
// A package registers in an init function. A new kind is one package with one Register
// call carrying every facet. The built-in kinds' facets come from the packages that can
// build them without an import cycle (the recipe package adds the bi-encoder's Train,
// package export the loaders of the kinds it exports, commands/train the commands), each
// Register filling the fields it sets. Import the packages whose kinds you need; package
// kinds/all imports every built-in kind, and the root package toolret imports it.
package kinds

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/train"
)

// Kind is one model kind. Every field but Name may be nil or empty where the kind lacks it.
type Kind struct {
	// Name is the kind as run.json records it (rundir.Meta.Kind): "biencoder", ...
	Name string
	// ConfigFile is the model configuration file the kind's runs and checkpoints hold
	// ("biencoder.json"): it identifies a run or checkpoint without run.json.
	ConfigFile string
	// Base is the kind whose files this kind's runs hold too and which stands in for it
	// where it has no facet of its own (pretrain runs are bi-encoders: "biencoder").
	Base string
	// NewConfig returns a pointer to the kind's typed training configuration holding its
	// defaults (e.g. *biencoder.TrainConfig).
	NewConfig func() any
	// FromArgs migrates the flags a format-1 run recorded (rundir.Meta.Args) to a pointer to
	// the typed configuration; nil: rundir.ConfigFromArgs over NewConfig's defaults.
	FromArgs func(args map[string]string) (any, error)
	// Train trains a run from the typed configuration (the type NewConfig points to, or a
	// pointer to it). Nil: the kind trains with its command only.
	Train func(ctx context.Context, cfg any) (*Result, error)
	// Rank opens a trained run, or one of its checkpoints, as a ranker of the tools of d.
	Rank func(dir string, be compute.Backend, d *data.Dataset) (rank.Ranker, error)
	// Help is the kind's line in `toolret train -h` and in toolret's help ("train a
	// bi-encoder tool retriever").
	Help string
	// Command is `toolret train NAME`: it parses args (the words after NAME) into the
	// typed configuration and trains. Nil: the kind is not a train command.
	Command func(args []string) error
	// Export is how the kind's models export (package export); nil: they do not.
	Export *Export
}

// Export is a kind's export facet: what package export reads to load, gate and index the
// kind's runs.
type Export struct {
	// Formats are the export formats the kind's models write (export.FormatHF "hf",
	// FormatONNX "onnx", FormatIndex "index").
	Formats []string
	// FirstStage is the kind's role as an index's first stage (export.Manifest.FirstStage):
	// "biencoder" (tool embeddings), "mlc" (a classifier head's rows and biases); "" for a
	// kind that is not one. A kind with FormatIndex has one.
	FirstStage string
	// Load loads the model of a checkpoint directory (the run's best checkpoint, or the one
	// given) as an *export.Model; package export.Facet builds it from a typed loader (this
	// package cannot name the type: export imports it).
	Load func(checkpointDir string, be compute.Backend) (any, error)
}

// Exports says whether the kind's models export in format.
func (k Kind) Exports(format string) bool {
	return k.Export != nil && slices.Contains(k.Export.Formats, format)
}

// Result is what a kind's Train returns.
type Result struct {
	// RunDir is the run directory trained into.
	RunDir string
	// Config is the configuration the run trained with, as run.json records it (a pointer to
	// the kind's typed configuration).
	Config any
	// Summary is the trainer's end-of-training summary.
	Summary *train.Summary
	// Test holds the test reports the recipe computed, by variant (a bi-encoder's tool
	// vectors: "text", "usage"); nil without a test split.
	Test map[string]metrics.Report
}

var (
	mu    sync.RWMutex
	kinds = map[string]*Kind{}
)

// Register adds kind k, or fills in the fields k sets of a kind registered before under
// k.Name. It panics (at init, a programming error) when k has no name or sets a field
// another registration set already.
func Register(k Kind) {
	if k.Name == "" {
		panic("kinds: Register without a name")
	}
	mu.Lock()
	defer mu.Unlock()
	old, ok := kinds[k.Name]
	if !ok {
		kinds[k.Name] = &k
		return
	}
	dup := func(field string, set bool) {
		if set {
			panic(fmt.Sprintf("kinds: %s registered twice for kind %s", field, k.Name))
		}
	}
	if k.ConfigFile != "" && k.ConfigFile != old.ConfigFile {
		dup("ConfigFile", old.ConfigFile != "")
		old.ConfigFile = k.ConfigFile
	}
	if k.Base != "" && k.Base != old.Base {
		dup("Base", old.Base != "")
		old.Base = k.Base
	}
	if k.NewConfig != nil {
		dup("NewConfig", old.NewConfig != nil)
		old.NewConfig = k.NewConfig
	}
	if k.FromArgs != nil {
		dup("FromArgs", old.FromArgs != nil)
		old.FromArgs = k.FromArgs
	}
	if k.Train != nil {
		dup("Train", old.Train != nil)
		old.Train = k.Train
	}
	if k.Rank != nil {
		dup("Rank", old.Rank != nil)
		old.Rank = k.Rank
	}
	if k.Help != "" {
		dup("Help", old.Help != "")
		old.Help = k.Help
	}
	if k.Command != nil {
		dup("Command", old.Command != nil)
		old.Command = k.Command
	}
	if k.Export != nil {
		dup("Export", old.Export != nil)
		old.Export = k.Export
	}
}

// Lookup returns the kind registered under name.
func Lookup(name string) (Kind, error) {
	mu.RLock()
	defer mu.RUnlock()
	if k, ok := kinds[name]; ok {
		return *k, nil
	}
	return Kind{}, fmt.Errorf("unknown model kind %q (known: %s)", name, strings.Join(namesLocked(), ", "))
}

// Names returns the registered kinds' names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	out := make([]string, 0, len(kinds))
	for n := range kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ErrNotKind is wrapped by Of's error for a directory no registered kind recognises.
var ErrNotKind = errors.New("not a run or checkpoint of a known model kind")

// Of returns the kind of the run or checkpoint at path: the kind its run.json names when it
// has one (a registered one), else the kind whose configuration file the directory or its
// best checkpoint holds; among several, a kind is preferred to its Base.
func Of(path string) (Kind, error) {
	if m, err := rundir.Read(rundir.RunOf(path)); err == nil {
		if k, err := Lookup(m.Kind); err == nil {
			return k, nil
		}
	}
	dirs := []string{path}
	if c, err := rundir.CheckpointDir(path); err == nil && c != path {
		dirs = append(dirs, c)
	}
	mu.RLock()
	defer mu.RUnlock()
	var files []string
	for _, d := range dirs {
		found := map[string]*Kind{}
		for _, k := range kinds {
			if k.ConfigFile == "" {
				continue
			}
			if _, err := os.Stat(filepath.Join(d, k.ConfigFile)); err == nil {
				found[k.Name] = k
			}
		}
		for _, k := range found {
			delete(found, k.Base)
		}
		if len(found) > 0 {
			var ns []string
			for n := range found {
				ns = append(ns, n)
			}
			sort.Strings(ns)
			return *found[ns[0]], nil
		}
	}
	for _, n := range namesLocked() {
		if f := kinds[n].ConfigFile; f != "" {
			files = append(files, f)
		}
	}
	return Kind{}, fmt.Errorf("%s: %w (none of %s)", path, ErrNotKind, strings.Join(files, ", "))
}

// Train trains a run of the named kind from its typed configuration (see Kind.Train).
func Train(ctx context.Context, name string, cfg any) (*Result, error) {
	k, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if k.Train == nil {
		return nil, fmt.Errorf("kind %s has no library recipe yet: train it with `toolret train %s`", name, name)
	}
	return k.Train(ctx, cfg)
}

// Config returns the typed configuration of the run at dir: run.json's Config when it has
// one, else its flags migrated by the kind's FromArgs (without one, rundir.ConfigFromArgs
// over the kind's defaults). The result is a pointer to the kind's configuration type.
func Config(dir string) (any, error) {
	m, err := rundir.Read(dir)
	if err != nil {
		return nil, err
	}
	return configOf(dir, m)
}

// configOf is Config of the run at dir whose run.json m is read.
func configOf(dir string, m *rundir.Meta) (any, error) {
	k, err := Lookup(m.Kind)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	if k.NewConfig == nil {
		return nil, fmt.Errorf("run %s: kind %s has no typed configuration", dir, k.Name)
	}
	cfg := k.NewConfig()
	if _, err := m.DecodeConfig(cfg, func(args map[string]string) error {
		if k.FromArgs == nil {
			return rundir.ConfigFromArgs(cfg, args)
		}
		c, err := k.FromArgs(args)
		cfg = c
		return err
	}); err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	return cfg, nil
}

// Resume checks cfg (a pointer to the kind's typed configuration), the configuration of a
// resumption of the run at dir, against the run's recorded one (Config): an error names every
// field that differs (rundir.ConfigDiffError: "resume DIR: refused, the configuration differs
// from the run's: lr 0.001 != recorded 0.0005"). Operational fields (tagged json:"-": the run
// directory, the backend, ...) may differ. A run of another kind is refused, what naming this
// one ("bi-encoder").
func Resume(dir, kind, what string, cfg any) error {
	m, err := rundir.Read(dir)
	if err != nil {
		return err
	}
	if m.Kind != kind {
		return fmt.Errorf("resume %s: a %s run, not a %s run", dir, m.Kind, what)
	}
	rec, err := configOf(dir, m)
	if err != nil {
		return err
	}
	return rundir.ConfigDiffError(dir, rundir.ConfigDiff(rec, cfg))
}

// Rank opens the trained run or checkpoint at path as a ranker of d's tools, whatever its
// registered kind (a kind without Rank of its own ranks as its Base).
func Rank(path string, be compute.Backend, d *data.Dataset) (rank.Ranker, error) {
	k, err := Of(path)
	if err != nil {
		return nil, err
	}
	if k.Rank == nil && k.Base != "" {
		if b, err := Lookup(k.Base); err == nil {
			k.Rank = b.Rank
		}
	}
	if k.Rank == nil {
		return nil, fmt.Errorf("%s: a %s run does not rank tools on its own", path, k.Name)
	}
	return k.Rank(path, be, d)
}

// All returns the registered kinds, sorted by name.
func All() []Kind {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Kind, 0, len(kinds))
	for _, n := range namesLocked() {
		out = append(out, *kinds[n])
	}
	return out
}
