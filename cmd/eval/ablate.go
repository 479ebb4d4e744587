package evalcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/retrieve"
)

// rerankVariant is one row of the -ablations table.
type rerankVariant struct {
	name   string
	mode   rerank.Mode
	oracle bool // query type from the qrels instead of the classifier
	plainM int  // > 0: Rerank-m with m = plainM (no grid search; the weight tuned on dev with -weight dev)
	// noInterp: the cross-encoder's scores alone (a row only when -interpolate is on).
	noInterp bool
}

var rerankVariants = []rerankVariant{
	{name: "Rerank-10", mode: rerank.ModeNone, plainM: 10},
	{name: "Rerank-30", mode: rerank.ModeNone, plainM: 30},
	{name: "Rerank-50", mode: rerank.ModeNone, plainM: 50},
	{name: "ToolRerank", mode: rerank.ModeAuto},
	{name: "- without hierarchy", mode: rerank.ModeNone},
	{name: "- Alg. 1 only (single)", mode: rerank.ModeSingle},
	{name: "- Alg. 2 only (multi)", mode: rerank.ModeMulti},
	{name: "- oracle query type", mode: rerank.ModeAuto, oracle: true},
	{name: "- without interpolation", mode: rerank.ModeAuto, noInterp: true},
}

// runAblations evaluates every variant on the -split queries and writes one table.
func runAblations(o *options, w io.Writer, d *data.Dataset) error {
	ks := o.ks
	if o.method != "rerank" || o.run != "" || o.rr.noHierarchy || o.rr.only != "" || o.rr.oracleType {
		return fmt.Errorf("-ablations needs -method rerank without -run, -no-hierarchy, -only or -oracle-type (it runs them all)")
	}
	if _, err := metricFn(o.rr.gridMetric); err != nil {
		return err
	}
	env, err := setupRerank(o, d, false)
	if err != nil {
		return err
	}
	ctx := context.Background()
	devQs, err := env.prep(env.dev)
	if err != nil {
		return err
	}
	evalQs, err := env.prep(env.eval)
	if err != nil {
		return err
	}
	names := []string{"bi-encoder alone"}
	var results []metrics.Result
	params := []string{"retriever ranking"}
	coarse := make([][]int, len(evalQs))
	for i, q := range evalQs {
		coarse[i] = q.Coarse
	}
	rep, err := metrics.EvaluateSplit(ctx, d, env.eval, byQuery(env.eval, coarse), ks)
	if err != nil {
		return err
	}
	results = append(results, rep.Overall)
	for _, v := range rerankVariants {
		if v.noInterp && env.pl.Norm == rerank.NormOff {
			continue
		}
		start := time.Now()
		pl := env.pl
		pl.Mode = v.mode
		if v.noInterp {
			pl.Norm = rerank.NormOff
		}
		dq, eq := devQs, evalQs
		if v.oracle {
			dq, eq = withOracleTypes(d, env.dev, devQs), withOracleTypes(d, env.eval, evalQs)
		}
		desc := ""
		switch {
		case v.plainM > 0 && (pl.Norm == rerank.NormOff || len(env.grid.W) <= 1):
			pl.Params.MS, pl.Params.MU = v.plainM, v.plainM
			desc = fmt.Sprintf("m=%d", v.plainM)
			if pl.Norm != rerank.NormOff {
				desc += fmt.Sprintf(", interpolation %s w=%g", pl.Norm, pl.Params.W)
			}
		case v.plainM > 0: // the weight alone, tuned on dev
			p := pl.Params
			g := rerank.Grid{M: [][2]int{{v.plainM, v.plainM}}, TauS: []float32{p.TauS}, TauM: []float32{p.TauM}, N: []int{p.N}, W: env.grid.W}
			best, val, err := tuneOnDev(pl, dq, g, o.rr.gridMetric, o.rr.minT)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			pl.Params = best
			desc = fmt.Sprintf("m=%d, interpolation %s w=%g (dev %s %.2f)", v.plainM, pl.Norm, best.W, o.rr.gridMetric, 100*val)
		default:
			best, val, err := tuneOnDev(pl, dq, env.grid, o.rr.gridMetric, o.rr.minT)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			pl.Params = best
			desc = fmt.Sprintf("%s (dev %s %.2f)", pl.Setting(), o.rr.gridMetric, 100*val)
		}
		rk, err := pl.RunAll(ctx, eq)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		rep, err := metrics.EvaluateSplit(ctx, d, env.eval, byQuery(env.eval, rk), ks)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "rerank: %s: %s in %v\n", v.name, desc, time.Since(start).Round(time.Millisecond))
		names = append(names, v.name)
		results = append(results, rep.Overall)
		params = append(params, desc)
	}
	if o.asJSON {
		rows := make([]map[string]any, len(names))
		for i := range names {
			rows[i] = map[string]any{"name": names[i], "params": params[i], "metrics": results[i]}
		}
		return json.NewEncoder(w).Encode(rows)
	}
	fmt.Fprintf(w, "%s / %s: ToolRerank variants (grid metric %s on %d dev queries)\n", d.Name, env.eval.Name, o.rr.gridMetric, len(devQs))
	fmt.Fprint(w, metrics.Table(names, results))
	for i := range names {
		fmt.Fprintf(w, "  %-24s %s\n", names[i], params[i])
	}
	return nil
}

// byQuery keys rankings[i], the ranking of the i-th query of s (prep's order), by its query
// index.
func byQuery(s *data.Split, rankings [][]int) retrieve.Fixed {
	f := make(retrieve.Fixed, len(rankings))
	for i, r := range rankings {
		f[s.Queries[i]] = r
	}
	return f
}

// withOracleTypes returns a copy of qs whose query types come from the split's qrels.
func withOracleTypes(d *data.Dataset, s *data.Split, qs []rerank.Query) []rerank.Query {
	types := classifier.QueryTypes(d, s)
	out := make([]rerank.Query, len(qs))
	copy(out, qs)
	for i, q := range s.Queries {
		out[i].Multi = types[q]
	}
	return out
}
