package evalcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
)

// runAblations evaluates every variant (evaluate.Variants) on the -split queries and
// writes one table.
func runAblations(o *options, w io.Writer, d *data.Dataset) error {
	if o.method != "rerank" || o.run != "" || o.rr.noHierarchy || o.rr.only != "" || o.rr.oracleType {
		return fmt.Errorf("-ablations needs -method rerank without -run, -no-hierarchy, -only or -oracle-type (it runs them all)")
	}
	t, err := tuneOptions(&o.rr)
	if err != nil {
		return err
	}
	env, err := setupRerank(o, d, false)
	if err != nil {
		return err
	}
	rows, devQueries, err := env.Ablations(context.Background(), o.ks, t)
	if err != nil {
		return err
	}
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
	fmt.Fprintf(w, "%s / %s: ToolRerank variants (grid metric %s on %d dev queries)\n", d.Name, env.Eval.Name, o.rr.gridMetric, devQueries)
	fmt.Fprint(w, metrics.Table(names, results))
	for _, r := range rows {
		fmt.Fprintf(w, "  %-24s %s\n", r.Name, r.Params)
	}
	return nil
}
