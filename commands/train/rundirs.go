package traincmd

import (
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/rundir"
)

// opFlags are the flags a run's resumption may change: they are no part of its
// configuration and are not taken from the run.
var opFlags = map[string]bool{"resume": true, "run": true, "quiet": true, "backend": true, "devices": true}

// openRun starts every training command's run directory: without -run a new one is named
// runs/PREFIX-TIME; a new run refuses a directory that already holds one. With resume the
// run's record is read (nil otherwise) and its kind checked (what names it in the error); the
// fields of cfg (a pointer to the kind's typed configuration, bound to fs) whose flags the
// command line does not give take the run's recorded values (kinds.Config), and so do the
// flags outside the configuration (-data, -holdout-tools and -holdout-seed of the commands
// whose configuration holds the dataset itself). The kind's Train then refuses the flags given
// that differ from the run's, naming each.
func openRun(fs *flag.FlagSet, runDir *string, resume bool, prefix, kind, what string, cfg any) (*rundir.Meta, error) {
	if *runDir == "" {
		if resume {
			return nil, fmt.Errorf("-resume needs -run")
		}
		*runDir = filepath.Join("runs", prefix+"-"+time.Now().Format("20060102-150405"))
	}
	if !resume {
		return nil, checkNewRun(*runDir)
	}
	meta, err := rundir.Read(*runDir)
	if err != nil {
		return nil, err
	}
	if meta.Kind != kind {
		return nil, fmt.Errorf("resume %s: a %s run, not a %s run", *runDir, meta.Kind, what)
	}
	rec, err := kinds.Config(*runDir)
	if err != nil {
		return nil, err
	}
	set := cli.Set(fs)
	if err := rundir.CopyConfig(cfg, rec, func(name string) bool { return set[name] }); err != nil {
		return nil, fmt.Errorf("resume %s: %w", *runDir, err)
	}
	leaves := rundir.ConfigArgs(rec)
	names := make([]string, 0, len(meta.Args))
	for n := range meta.Args {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, leaf := leaves[n]; leaf || set[n] || opFlags[n] || fs.Lookup(n) == nil {
			continue
		}
		if err := fs.Set(n, meta.Args[n]); err != nil {
			return nil, fmt.Errorf("resume %s: recorded -%s %q: %w", *runDir, n, meta.Args[n], err)
		}
	}
	return meta, nil
}
