// Command convert converts a tool-retrieval dataset between the BEIR and Parquet layouts, and
// writes held-out-tool views of it.
//
//	convert -from DIR -to OUTDIR [-format parquet|beir] [-holdout-tools F -holdout-seed N]
//
// The input layout is detected. Without -from, the embedded default dataset is converted.
// With -holdout-tools the output is the held-out-tool view (data.Dataset.HoldoutTools): the
// test split holds every query that needs a held-out tool, train the others, and
// holdout.json records the view, so that loading the output gives the view -data DIR
// -holdout-tools F -holdout-seed N gives (same fingerprint, dev split carved by tools).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
)

func main() {
	from := flag.String("from", "", "input dataset directory (BEIR or Parquet); default: the embedded default dataset")
	to := flag.String("to", "", "output directory")
	format := flag.String("format", "parquet", "output layout: parquet or beir")
	force := flag.Bool("force", false, "write into a non-empty output directory")
	cli.Holdout(flag.CommandLine)
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "convert: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	h, err := cli.HoldoutOf(flag.CommandLine)
	if err == nil {
		err = run(*from, *to, *format, *force, h)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "convert:", err)
		os.Exit(1)
	}
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
