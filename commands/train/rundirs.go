package traincmd

import (
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/rundir"
)

// openRun starts every training command's run directory: without -run a new one is named
// runs/PREFIX-TIME; with resume the run's record is read (nil otherwise), its kind checked
// (what names it in the error) and its recorded flags re-applied to fs; a new run refuses a
// directory that already holds one.
func openRun(fs *flag.FlagSet, runDir *string, resume bool, prefix, kind, what string) (*rundir.Meta, error) {
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
	if err := cli.ApplyRecorded(fs, *runDir, meta.Args); err != nil {
		return nil, err
	}
	return meta, nil
}
