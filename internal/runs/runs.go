// Package runs holds what the training recipes of toolret's model kinds share (package
// crossencoder, classifier, refiner, colt and pretrain's Train): starting or resuming a run
// directory, the checks of the trainer's knobs, building a from-scratch encoder of an
// architecture, and the whole recipe of the encoder + head models (Head).
//
// Errors name the command-line flag of the knob at fault (-lr, -max-len, ...): the
// configurations are the commands' flags as typed fields, and the commands print these
// errors as they are.
package runs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// CheckNew refuses to start a new run in a directory that already holds one (rundir.CheckNew).
func CheckNew(dir string) error { return rundir.CheckNew(dir) }

// Open checks the run directory dir a recipe trains into: a new run (resume false) must not
// hold one (CheckNew); a resumed one must be a run of kind (what names the kind in the error).
func Open(dir string, resume bool, kind, what string) error {
	if dir == "" {
		return fmt.Errorf("no run directory (-run)")
	}
	if !resume {
		return CheckNew(dir)
	}
	meta, err := rundir.Read(dir)
	if err != nil {
		return err
	}
	if meta.Kind != kind {
		return fmt.Errorf("resume %s: a %s run, not a %s run", dir, meta.Kind, what)
	}
	return nil
}

// Resume checks cfg (a pointer to the kind's typed configuration), the configuration of a
// resumption of the run at dir, a run of kind (what names it in errors), against the run's
// recorded one: an error names every field that differs (kinds.Resume).
func Resume(dir, kind, what string, cfg any) error {
	if dir == "" {
		return fmt.Errorf("no run directory (-run)")
	}
	return kinds.Resume(dir, kind, what, cfg)
}

// Start is the set-up every kind's Train begins with: it checks the run directory dir of a
// run of kind (Open; what names the kind in errors), takes the dataset d (nil: the embedded
// default, Dataset) and opens the training backend with its devices (train.OpenBackend).
func Start(dir string, resume bool, kind, what string, d *data.Dataset, backendName string, devices int) (*data.Dataset, compute.Backend, error) {
	if err := Open(dir, resume, kind, what); err != nil {
		return nil, nil, err
	}
	d, err := Dataset(d)
	if err != nil {
		return nil, nil, err
	}
	bk, err := train.OpenBackend(backendName, devices)
	if err != nil {
		return nil, nil, err
	}
	return d, bk, nil
}

// CheckWarmup validates -warmup, a fraction of the steps.
func CheckWarmup(w float64) error {
	if !(w >= 0 && w < 1) {
		return fmt.Errorf("-warmup %v: a fraction of the steps, must be in [0, 1)", w)
	}
	return nil
}

// CheckMaxLen reports an error naming -max-len unless n holds at least the least special
// tokens (named by specials).
func CheckMaxLen(n, least int, specials string) error {
	if n < least {
		return fmt.Errorf("-max-len %d: must be >= %d (%s)", n, least, specials)
	}
	return nil
}

// LoadResume reads a run's model configuration (configFile, decoded by unmarshal) and its
// tokenizer, to resume the run.
func LoadResume[T any](runDir, configFile string, unmarshal func([]byte) (*T, error)) (*T, *tokenize.Tokenizer, error) {
	b, err := os.ReadFile(filepath.Join(runDir, configFile))
	if err != nil {
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	c, err := unmarshal(b)
	if err != nil {
		return nil, nil, err
	}
	tok, err := tokenize.Load(runDir)
	return c, tok, err
}

// Writers returns out and log, os.Stdout and os.Stderr where nil: where a recipe prints its
// reports and its messages.
func Writers(out, log io.Writer) (io.Writer, io.Writer) {
	if out == nil {
		out = os.Stdout
	}
	if log == nil {
		log = os.Stderr
	}
	return out, log
}
