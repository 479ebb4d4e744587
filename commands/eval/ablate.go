package evalcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/metrics"
)

// runAblations evaluates every variant (evaluate.Variants) on the -split queries
// (toolret.EvaluateAblations) and writes one table.
func runAblations(o *options, w io.Writer) error {
	if o.method != "rerank" || o.run != "" || o.rr.noHierarchy || o.rr.only != "" || o.rr.oracleType {
		return fmt.Errorf("-ablations needs -method rerank without -run, -no-hierarchy, -only or -oracle-type (it runs them all)")
	}
	cfg, err := evalConfig(o)
	if err != nil {
		return err
	}
	rep, err := toolret.EvaluateAblations(context.Background(), cfg)
	if err != nil {
		return err
	}
	rows := rep.Rows
	if o.asJSON {
		out := make([]map[string]any, len(rows))
		for i, r := range rows {
			out[i] = map[string]any{"name": r.Name, "params": r.Params, "metrics": r.Metrics}
		}
		return json.NewEncoder(w).Encode(out)
	}
	names := make([]string, len(rows))
	results := make([]metrics.Result, len(rows))
	for i, r := range rows {
		names[i], results[i] = r.Name, r.Metrics
	}
	fmt.Fprintf(w, "%s / %s: ToolRerank variants (grid metric %s on %d dev queries)\n", rep.Dataset, rep.Split, rep.Metric, rep.DevQueries)
	fmt.Fprint(w, metrics.Table(names, results))
	for _, r := range rows {
		fmt.Fprintf(w, "  %-24s %s\n", r.Name, r.Params)
	}
	return nil
}
