package evalcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rundir"
)

// runCompare is -compare A,B: both rankings of the split's judged queries, scored query by
// query, and each metric's difference B − A tested (metrics.Compare).
func runCompare(o *options, w io.Writer) error {
	items := splitRuns(o.compare)
	switch {
	case len(items) != 2:
		return fmt.Errorf("-compare %q: want two rankings A,B (a method, run:RUN or a TREC run file)", o.compare)
	case o.run != "" || o.index != "" || o.method == "fusion" || o.saveRun != "" || o.ablations || o.fb.active():
		return fmt.Errorf("-compare ranks its own two entries: not with -run, -index, -method fusion, -save-run, -ablations, -feedback or -refiner")
	}
	d, err := loadData(o)
	if err != nil {
		return err
	}
	s, err := evalSplit(o, d)
	if err != nil {
		return err
	}
	var dev *rundir.Meta
	if isDevSplit(o, d) {
		if _, _, dev, err = devSplit(o, d); err != nil {
			return err
		}
	}
	qs, rel := fusion.SplitQueries(d, s)
	depth := 0
	for _, k := range o.ks {
		depth = max(depth, k)
	}
	per := make([]map[string][]float64, 2)
	start := time.Now()
	for i, it := range items {
		in, err := fusionInput(o, d, "-compare", o.compare, it, dev)
		if err != nil {
			return err
		}
		rk, err := in.Rank(context.Background(), qs, depth)
		if err != nil {
			return err
		}
		per[i] = metrics.PerQuery(rk, rel, o.ks)
	}
	rows, err := metrics.CompareAll(per[0], per[1], o.ks, o.compareSamples, o.seed)
	if err != nil {
		return fmt.Errorf("-compare %w", err)
	}
	if o.asJSON {
		return json.NewEncoder(w).Encode(map[string]any{"dataset": d.Name, "split": s.Name, "queries": len(qs),
			"a": items[0], "b": items[1], "samples": o.compareSamples, "seed": o.seed, "metrics": rows})
	}
	fmt.Fprintf(w, "%s / %s, %d queries: A = %s, B = %s (%v); B − A with its 95%% paired-bootstrap interval and the p-value of a paired randomization test (%d samples, seed %d)\n",
		d.Name, s.Name, len(qs), items[0], items[1], time.Since(start).Round(time.Millisecond), o.compareSamples, o.seed)
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
