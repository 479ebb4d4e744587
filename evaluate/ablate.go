package evaluate

import (
	"context"
	"fmt"
	"time"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// Variant is one row of the ToolRerank ablation table.
type Variant struct {
	Name   string
	Mode   rerank.Mode
	Oracle bool // query type from the qrels instead of the classifier
	PlainM int  // > 0: Rerank-m with m = PlainM (no grid search; the weight tuned on dev when several)
	// NoInterp: the cross-encoder's scores alone (a row only when the pipeline interpolates).
	NoInterp bool
}

// Variants are the rows of Ablations after the bi-encoder alone: Rerank-m, ToolRerank and
// its ablations.
var Variants = []Variant{
	{Name: "Rerank-10", Mode: rerank.ModeNone, PlainM: 10},
	{Name: "Rerank-30", Mode: rerank.ModeNone, PlainM: 30},
	{Name: "Rerank-50", Mode: rerank.ModeNone, PlainM: 50},
	{Name: "ToolRerank", Mode: rerank.ModeAuto},
	{Name: "- without hierarchy", Mode: rerank.ModeNone},
	{Name: "- Alg. 1 only (single)", Mode: rerank.ModeSingle},
	{Name: "- Alg. 2 only (multi)", Mode: rerank.ModeMulti},
	{Name: "- oracle query type", Mode: rerank.ModeAuto, Oracle: true},
	{Name: "- without interpolation", Mode: rerank.ModeAuto, NoInterp: true},
}

// AblationRow is one row of Ablations: a variant, how it was set (tuned on dev), and its
// metrics on the evaluated split.
type AblationRow struct {
	Name    string         `json:"name"`
	Params  string         `json:"params"`
	Metrics metrics.Result `json:"metrics"`
}

// Ablations evaluates the bi-encoder alone and every Variant on the evaluated split, each
// ToolRerank row tuned on the dev split with t (rerank.Tune; Rerank-m rows tune the weight
// alone), with cross-encoder scores computed once. devQueries is the dev split's size.
func (r *Rerank) Ablations(ctx context.Context, ks []int, t rerank.TuneOptions) (rows []AblationRow, devQueries int, err error) {
	devQs, err := r.Prepare(r.Dev)
	if err != nil {
		return nil, 0, err
	}
	evalQs, err := r.Prepare(r.Eval)
	if err != nil {
		return nil, 0, err
	}
	coarse := make([][]int, len(evalQs))
	for i, q := range evalQs {
		coarse[i] = q.Coarse
	}
	rep, err := metrics.EvaluateSplit(ctx, r.D, r.Eval, byQuery(r.Eval, coarse), ks)
	if err != nil {
		return nil, 0, err
	}
	rows = append(rows, AblationRow{Name: "bi-encoder alone", Params: "retriever ranking", Metrics: rep.Overall})
	for _, v := range Variants {
		if v.NoInterp && r.Pipeline.Norm == rerank.NormOff {
			continue
		}
		start := time.Now()
		pl := r.Pipeline
		pl.Mode = v.Mode
		if v.NoInterp {
			pl.Norm = rerank.NormOff
		}
		dq, eq := devQs, evalQs
		if v.Oracle {
			dq, eq = withOracleTypes(r.D, r.Dev, devQs), withOracleTypes(r.D, r.Eval, evalQs)
		}
		desc := ""
		switch {
		case v.PlainM > 0 && (pl.Norm == rerank.NormOff || len(r.Grid.W) <= 1):
			pl.Params.MS, pl.Params.MU = v.PlainM, v.PlainM
			desc = fmt.Sprintf("m=%d", v.PlainM)
			if pl.Norm != rerank.NormOff {
				desc += fmt.Sprintf(", interpolation %s w=%g", pl.Norm, pl.Params.W)
			}
		case v.PlainM > 0: // the weight alone, tuned on dev
			p := pl.Params
			g := rerank.Grid{M: [][2]int{{v.PlainM, v.PlainM}}, TauS: []float32{p.TauS}, TauM: []float32{p.TauM}, N: []int{p.N}, W: r.Grid.W}
			best, val, err := rerank.Tune(ctx, pl, dq, g, t)
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %w", v.Name, err)
			}
			pl.Params = best
			desc = fmt.Sprintf("m=%d, interpolation %s w=%g (dev %s %.2f)", v.PlainM, pl.Norm, best.W, t.Metric, 100*val)
		default:
			best, val, err := rerank.Tune(ctx, pl, dq, r.Grid, t)
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %w", v.Name, err)
			}
			pl.Params = best
			desc = fmt.Sprintf("%s (dev %s %.2f)", pl.Setting(), t.Metric, 100*val)
		}
		rk, err := pl.RunAll(ctx, eq)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", v.Name, err)
		}
		rep, err := metrics.EvaluateSplit(ctx, r.D, r.Eval, byQuery(r.Eval, rk), ks)
		if err != nil {
			return nil, 0, err
		}
		fmt.Fprintf(r.log, "rerank: %s: %s in %v\n", v.Name, desc, time.Since(start).Round(time.Millisecond))
		rows = append(rows, AblationRow{Name: v.Name, Params: desc, Metrics: rep.Overall})
	}
	return rows, len(devQs), nil
}

// byQuery keys rankings[i], the ranking of the i-th query of s (Prepare's order), by its
// query index.
func byQuery(s *data.Split, rankings [][]int) rank.Fixed {
	f := make(rank.Fixed, len(rankings))
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
