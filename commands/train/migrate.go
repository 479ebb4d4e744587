package traincmd

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/train"
)

// migrateCmd writes run.json for a run directory made before toolret recorded dev splits:
// the split is carved again with the -dev and -seed the run was trained with (its
// data_split.json when it has one), and the kind is read from its model configuration.
func migrateCmd(args []string) error {
	fs := flag.NewFlagSet("train migrate", flag.ContinueOnError)
	cli.Data(fs)
	runDir := cli.Run(fs, "the run directory to migrate (required)")
	devFrac := fs.Float64("dev", 0, "the -dev the run was trained with (default: its data_split.json, else 0.1)")
	seed := fs.Int64("seed", -1, "the -seed the run was trained with (default: its data_split.json, else its train_config.json)")
	parent := cli.FirstStage(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *runDir == "" {
		return fmt.Errorf("migrate needs -run DIR")
	}
	if _, err := os.Stat(filepath.Join(*runDir, rundir.MetaFile)); err == nil {
		return fmt.Errorf("%s already has %s", *runDir, rundir.MetaFile)
	}
	k, err := kinds.Of(*runDir) // the registered kind whose model configuration the run holds
	if errors.Is(err, kinds.ErrNotKind) {
		return fmt.Errorf("%s: not a toolret run directory (none of %s)", *runDir, kindFiles())
	}
	if err != nil {
		return err
	}
	kind := k.Name
	frac, sd := cli.DefaultDev, int64(-1)
	if b, err := os.ReadFile(filepath.Join(*runDir, "data_split.json")); err == nil {
		var old struct {
			DevFraction float64 `json:"dev_fraction"`
			Seed        int64   `json:"seed"`
		}
		if err := json.Unmarshal(b, &old); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(*runDir, "data_split.json"), err)
		}
		frac, sd = old.DevFraction, old.Seed
	} else if b, err := os.ReadFile(filepath.Join(*runDir, train.ConfigFile)); err == nil {
		var tc struct {
			Seed int64 `json:"seed"`
		}
		if err := json.Unmarshal(b, &tc); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(*runDir, train.ConfigFile), err)
		}
		sd = tc.Seed
	}
	if *devFrac != 0 {
		frac = *devFrac
	}
	if *seed >= 0 {
		sd = *seed
	}
	if sd < 0 {
		return fmt.Errorf("%s: cannot tell the seed of its dev split: give -seed", *runDir)
	}
	if err := cli.Fraction("dev", frac); err != nil {
		return err
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	if steps, err := os.ReadDir(filepath.Join(*runDir, "checkpoints")); err == nil && len(steps) > 0 {
		if dir, err := rundir.BestCheckpoint(*runDir); err == nil {
			if b, err := os.ReadFile(filepath.Join(dir, "state.json")); err == nil {
				var m struct {
					Fingerprint string `json:"data_fingerprint"`
				}
				if json.Unmarshal(b, &m) == nil && m.Fingerprint != "" && m.Fingerprint != d.Fingerprint() {
					return fmt.Errorf("%s was trained on other data than %s (fingerprint %.12s, this data %.12s): give its -data", *runDir, d.Name, m.Fingerprint, d.Fingerprint())
				}
			}
		}
	}
	sp, _, _, err := rundir.Carve(d, "train", frac, sd)
	if err != nil {
		return err
	}
	m := &rundir.Meta{Kind: kind, Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp, Parent: *parent,
		Args: map[string]string{"dev": fmt.Sprint(frac), "seed": fmt.Sprint(sd)}}
	if err := rundir.Create(*runDir, m); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s: wrote %s (%s run, dev %v seed %d: %d dev queries)\n", *runDir, rundir.MetaFile, kind, frac, sd, len(sp.DevIDs))
	return nil
}

// kindFiles lists the model configuration files of the registered kinds.
func kindFiles() string {
	var fs []string
	for _, n := range kinds.Names() {
		if k, err := kinds.Lookup(n); err == nil && k.ConfigFile != "" {
			fs = append(fs, k.ConfigFile)
		}
	}
	return strings.Join(fs, ", ")
}
