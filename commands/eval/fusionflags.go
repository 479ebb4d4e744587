package evalcmd

import (
	"fmt"
	"os"
	"strings"
)

// defaultFusion is -fusion's default: z-score interpolation with the weights picked on the
// dev split (-weight dev), the method that wins on held-out tools (docs/new-tools.md: a
// bi-encoder + BM25 at R@5 26.67 against BM25's 24.32 and rrf's 21.36).
const defaultFusion = "zscore"

// fusionMethod resolves -fusion: the one given, else defaultFusion, except that with
// -weight dev (the default) and no trained run whose recorded dev split the weights could be
// tuned on, it falls back to rrf, and says so on stderr.
func fusionMethod(o *options) string {
	if o.fu.method != "" {
		return o.fu.method
	}
	if !o.fu.weightGiven && len(runDirs(o)) == 0 {
		fmt.Fprintln(os.Stderr, "fusion: no trained run records a dev split to tune the zscore weights on (give run:RUN in -runs, or -first-stage): fusing with rrf (-fusion rrf says so; -weight W fixes zscore's weights)")
		return "rrf"
	}
	return defaultFusion
}

// runDirs returns the trained runs the options name, in the order that picks the dev split
// and the held-out-tool view: -run, -first-stage, then the run:RUN entries of -runs.
func runDirs(o *options) []string {
	var out []string
	for _, d := range []string{o.run, o.rr.retriever} {
		if d != "" {
			out = append(out, d)
		}
	}
	var items []string
	if o.method == "fusion" {
		items = splitRuns(o.fu.runs)
	}
	for _, it := range append(items, splitRuns(o.compare)...) {
		if dir, ok := strings.CutPrefix(it, "run:"); ok && dir != "" {
			out = append(out, dir)
		}
	}
	return out
}
