package traincmd

import (
	"flag"
	"fmt"
	"os"

	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/internal/flagcfg"
	"github.com/toolret/toolret/internal/runs"
)

// headOps are the operational flags of every train command: the fields of its configuration
// tagged json:"-" (runs.Head's, biencoder.TrainConfig's, ...), declared through the shared
// vocabulary.
type headOps struct {
	run, backend  *string
	resume, quiet *bool
	devices       *int
}

// declareOps declares the operational -run, -resume, -backend, -devices and -quiet on fs, for a
// command whose runs default to runs/PREFIX-<time>.
func declareOps(fs *flag.FlagSet, prefix string) headOps {
	return headOps{
		run:     cli.Run(fs, "run directory (default runs/"+prefix+"-<time>)"),
		resume:  cli.Resume(fs),
		backend: cli.Backend(fs),
		devices: cli.Devices(fs),
		quiet:   cli.Quiet(fs),
	}
}

// headFlags returns the flags of `train CMD`, whose configuration *cfg (the kind's
// DefaultTrainConfig) declares its settings: one flag per field (flagcfg.Bind, its value in
// *cfg as the default), -data with its -holdout-tools and -holdout-seed, and the operational
// flags (declareOps: runs default to runs/PREFIX-<time>).
func headFlags(cmd, prefix string, cfg any) (*flag.FlagSet, headOps, error) {
	fs := flag.NewFlagSet("train "+cmd, flag.ContinueOnError)
	cli.Data(fs)
	if _, err := flagcfg.Bind(fs, cfg); err != nil {
		return nil, headOps{}, err
	}
	return fs, declareOps(fs, prefix), nil
}

// startHead refuses extra arguments, opens the run directory (a resumed run's recorded
// configuration fills the fields of cfg, which embeds h, whose flags are not given; a new run
// needs a free directory), resolves -init and fills h's operational fields.
func startHead(fs *flag.FlagSet, op headOps, cfg any, h *runs.Head, cmd, kind string) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if _, err := openRun(fs, op.run, *op.resume, cmd, kind, kind, cfg); err != nil {
		return err
	}
	lr := &h.LR
	if *op.resume { // the run's recorded -lr
		lr = nil
	}
	if err := resolveInit(fs, &h.Init, nil, lr); err != nil {
		return err
	}
	set := cli.Set(fs)
	h.RunDir, h.Resume, h.Backend, h.Devices, h.Quiet = *op.run, *op.resume, *op.backend, *op.devices, *op.quiet
	h.ArchGiven, h.DevGiven = set["arch"], set["dev"]
	return nil
}

// defaultWarm turns a default -warm-start (not given on the command line) off when -init or a
// from-scratch size (-layers, -hidden, -heads, -intermediate) says how to build the encoder.
func defaultWarm(fs *flag.FlagSet, h *runs.Head) {
	set := cli.Set(fs)
	if !h.WarmStart || set["warm-start"] {
		return
	}
	for _, f := range []string{"init", "layers", "hidden", "heads", "intermediate"} {
		if set[f] {
			h.WarmStart = false
			fmt.Fprintf(os.Stderr, "-%s given: no warm start from the retriever\n", f)
			return
		}
	}
}
