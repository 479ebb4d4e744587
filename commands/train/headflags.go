package traincmd

import (
	"flag"
	"fmt"
	"os"

	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/internal/flagcfg"
	"github.com/toolret/toolret/internal/runs"
)

// headOps are the operational flags of the cross-encoder, classifier and refiner commands:
// the fields of runs.Head tagged json:"-", declared through the shared vocabulary.
type headOps struct {
	run, backend  *string
	resume, quiet *bool
	devices       *int
}

// headFlags returns the flags of a command whose configuration *cfg (the kind's
// DefaultTrainConfig, embedding runs.Head) declares its settings: one flag per field
// (flagcfg.Bind), -data with its -holdout-tools and -holdout-seed, and the operational -run,
// -resume, -backend, -devices and -quiet.
func headFlags(name string, cfg any) (*flag.FlagSet, headOps, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	cli.Data(fs)
	if _, err := flagcfg.Bind(fs, cfg); err != nil {
		return nil, headOps{}, err
	}
	op := headOps{
		run:     cli.Run(fs, "run directory (default runs/<command>-<time>)"),
		resume:  cli.Resume(fs),
		backend: cli.Backend(fs),
		devices: cli.Devices(fs),
		quiet:   cli.Quiet(fs),
	}
	return fs, op, nil
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
