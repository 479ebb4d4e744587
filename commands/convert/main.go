// Package convertcmd is the `toolret convert` command; it converts a tool-retrieval dataset between the BEIR and Parquet layouts, and
// writes held-out-tool views of it.
//
//	convert -from DIR -to OUTDIR [-format parquet|beir] [-holdout-tools F -holdout-seed N]
//
// The input layout is detected. Without -from, the embedded default dataset is converted.
// With -holdout-tools the output is the held-out-tool view (data.Dataset.HoldoutTools): the
// test split holds every query that needs a held-out tool, train the others, and
// holdout.json records the view, so that loading the output gives the view -data DIR
// -holdout-tools F -holdout-seed N gives (same fingerprint, dev split carved by tools).
package convertcmd

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
)

// Main runs `toolret convert` with args (the words after it) and returns the exit code.
func Main(args []string) int {
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	from := fs.String("from", "", "input dataset directory (BEIR or Parquet); default: the embedded default dataset")
	to := fs.String("to", "", "output directory")
	format := fs.String("format", "parquet", "output layout: parquet or beir")
	force := fs.Bool("force", false, "write into a non-empty output directory")
	cli.Holdout(fs)
	if err := cli.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "convert: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "convert: unexpected arguments %q\n", fs.Args())
		return 2
	}
	h, err := cli.HoldoutOf(fs)
	if err == nil {
		err = run(*from, *to, *format, *force, h)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "convert:", err)
		return 1
	}
	return 0
}

func run(from, to, format string, force bool, h *data.Holdout) error {
	if to == "" {
		return fmt.Errorf("-to is required")
	}
	if format != "parquet" && format != "beir" {
		return fmt.Errorf("-format %q: want parquet or beir", format)
	}
	if entries, err := os.ReadDir(to); err == nil && len(entries) > 0 && !force {
		return fmt.Errorf("output directory %s is not empty (use -force)", to)
	}
	d, err := data.Open(from, h)
	if err != nil {
		if h != nil {
			return fmt.Errorf("%s: %w", h.Flags(), err)
		}
		return err
	}
	if format == "parquet" {
		err = data.WriteParquet(d, to)
	} else {
		err = data.WriteBEIR(d, to)
	}
	if err != nil {
		return err
	}
	fmt.Printf("%s -> %s (%s)\n", d.Stats(), to, format)
	return nil
}
