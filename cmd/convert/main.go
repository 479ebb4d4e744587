// Command convert converts a tool-retrieval dataset between the BEIR and Parquet layouts.
//
//	convert -from DIR -to OUTDIR [-format parquet|beir]
//
// The input layout is detected. Without -from, the embedded default dataset is converted.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/toolret/toolret/data"
)

func main() {
	from := flag.String("from", "", "input dataset directory (BEIR or Parquet); default: the embedded default dataset")
	to := flag.String("to", "", "output directory")
	format := flag.String("format", "parquet", "output layout: parquet or beir")
	force := flag.Bool("force", false, "write into a non-empty output directory")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "convert: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if err := run(*from, *to, *format, *force); err != nil {
		fmt.Fprintln(os.Stderr, "convert:", err)
		os.Exit(1)
	}
}

func run(from, to, format string, force bool) error {
	if to == "" {
		return fmt.Errorf("-to is required")
	}
	if format != "parquet" && format != "beir" {
		return fmt.Errorf("-format %q: want parquet or beir", format)
	}
	if entries, err := os.ReadDir(to); err == nil && len(entries) > 0 && !force {
		return fmt.Errorf("output directory %s is not empty (use -force)", to)
	}
	var d *data.Dataset
	var err error
	if from == "" {
		d, err = data.Default()
	} else {
		d, err = data.Load(from)
	}
	if err != nil {
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
