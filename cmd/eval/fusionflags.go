package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// splitRuns splits -runs at commas, trimming spaces.
func splitRuns(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	out := strings.Split(s, ",")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

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
		fmt.Fprintln(os.Stderr, "fusion: no trained run records a dev split to tune the zscore weights on (give run:RUN in -runs, or -retriever): fusing with rrf (-fusion rrf says so; -weight W fixes zscore's weights)")
		return "rrf"
	}
	return defaultFusion
}

// parseFusionWeights parses a fixed -weight for n lists: W (two lists: W·first + (1-W)·second)
// or one non-negative weight per list.
func parseFusionWeights(s string, n int) ([]float64, error) {
	f := strings.Split(s, ",")
	w := make([]float64, len(f))
	for i, v := range f {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(x >= 0) {
			return nil, fmt.Errorf("-weight %q: want dev, W in [0, 1] (two -runs) or one weight >= 0 per -runs entry", s)
		}
		w[i] = x
	}
	if len(w) == 1 && n == 2 {
		if w[0] > 1 {
			return nil, fmt.Errorf("-weight %q: W·first + (1-W)·second needs W in [0, 1]", s)
		}
		w = []float64{w[0], 1 - w[0]}
	}
	if len(w) != n {
		return nil, fmt.Errorf("-weight %q: %d weights for %d -runs entries", s, len(w), n)
	}
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	if sum == 0 {
		return nil, fmt.Errorf("-weight %q: the weights are all 0", s)
	}
	return w, nil
}
