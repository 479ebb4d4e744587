package evalcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolret/toolret"
)

// runCompare is -compare A,B: both rankings of the split's judged queries, scored query by
// query, and each metric's difference B − A tested (toolret.Compare).
func runCompare(o *options, w io.Writer) error {
	items := splitRuns(o.compare)
	switch {
	case len(items) != 2:
		return fmt.Errorf("-compare %q: want two rankings A,B (a method, run:RUN or a run file)", o.compare)
	case o.run != "" || o.index != "" || o.method == "fusion" || o.saveRun != "" || o.ablations || o.fb.active():
		return fmt.Errorf("-compare ranks its own two entries: not with -run, -index, -method fusion, -save-run, -ablations, -feedback or -refiner")
	}
	for _, it := range items {
		if ref, ok := strings.CutPrefix(it, "model:"); ok {
			if _, err := modelDir(ref); err != nil {
				return fmt.Errorf("-compare %s: %w", it, err)
			}
		}
	}
	cfg := baseConfig(o)
	cfg.BM25, cfg.Vectors, cfg.Lengths, cfg.Quantize, cfg.SplitRun = &o.bm25, o.vectors, o.lengths, o.quantize, o.rr.retriever
	rep, err := toolret.Compare(context.Background(), toolret.CompareConfig{A: items[0], B: items[1], Samples: o.compareSamples, Seed: o.seed, Eval: cfg})
	if err != nil {
		return fmt.Errorf("-compare: %w", err)
	}
	rows := rep.Metrics
	if o.asJSON {
		return json.NewEncoder(w).Encode(map[string]any{"dataset": rep.Dataset, "split": rep.Split, "queries": rep.Queries,
			"a": items[0], "b": items[1], "samples": o.compareSamples, "seed": o.seed, "metrics": rows})
	}
	fmt.Fprintf(w, "%s / %s, %d queries: A = %s, B = %s (%v); B − A with its 95%% paired-bootstrap interval and the p-value of a paired randomization test (%d samples, seed %d)\n",
		rep.Dataset, rep.Split, rep.Queries, items[0], items[1], rep.Took.Round(time.Millisecond), o.compareSamples, o.seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tA\tB\tB − A\t95% interval\tp\t\t")
	for _, r := range rows {
		verdict := "within noise"
		if r.P < 0.05 {
			verdict = "B better"
			if r.Diff < 0 {
				verdict = "A better"
			}
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%+.2f\t[%+.2f, %+.2f]\t%.4f\t%s\t\n", r.Metric, r.A, r.B, r.Diff, r.Low, r.High, r.P, verdict)
	}
	return tw.Flush()
}
