package traincmd

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/train"
)

// plotCmd charts training runs together in one page (train.PlotRuns):
//
//	train plot [-out FILE] RUN [RUN...]
//
// One run without -out rewrites RUN/plot.html (as training leaves it); several need -out.
func plotCmd(args []string) error {
	fs := flag.NewFlagSet("train plot", flag.ContinueOnError)
	out := fs.String("out", "", "HTML file to write (default with one RUN: RUN/plot.html)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	runs := fs.Args()
	switch {
	case len(runs) == 0:
		return errors.New("plot: give the run directories to chart: train plot [-out FILE] RUN [RUN...]")
	case *out == "" && len(runs) > 1:
		return fmt.Errorf("plot: %d runs overlaid need -out FILE", len(runs))
	case *out == "":
		*out = filepath.Join(runs[0], train.PlotFile)
	}
	if err := train.PlotRuns(*out, runs...); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "plot: %s\n", *out)
	return nil
}
