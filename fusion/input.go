package fusion

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
)

// Input is one ranking to fuse: a live ranker (a method or a trained run), or the saved
// rankings of a TREC run file by query index (ReadInput).
type Input struct {
	// Name labels the input in errors ("-runs bm25", a file name).
	Name  string
	Live  rank.QueryRanker
	Saved map[int]rank.Ranking
}

// Rank returns the top k tools (k <= 0: all) of each query of qs. A saved input without a
// ranking for one of them is an error naming how many are missing and the first.
func (in *Input) Rank(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	if in.Live != nil {
		rk, err := in.Live.RankQueries(ctx, qs, k)
		if err == nil && len(rk) != len(qs) {
			err = fmt.Errorf("%d rankings for %d queries", len(rk), len(qs))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Name, err)
		}
		return rk, nil
	}
	out := make([]rank.Ranking, len(qs))
	missing := 0
	first := ""
	for i, q := range qs {
		r, ok := in.Saved[q.Index]
		if !ok {
			if missing == 0 {
				first = strconv.Quote(q.Text)
			}
			missing++
			continue
		}
		if k > 0 && len(r.Tools) > k {
			r = rank.Ranking{Tools: r.Tools[:k], Scores: r.Scores[:k]}
		}
		out[i] = r
	}
	if missing > 0 {
		return nil, fmt.Errorf("%s: no ranking for %d of the %d queries asked (first: %s): save the run on the same split and data (-split, -holdout-tools)", in.Name, missing, len(qs), first)
	}
	return out, nil
}

// ReadInput reads the TREC run file at path as rankings of d's queries and tools, named
// path: an unknown query or tool id is an error naming it.
func ReadInput(path string, d *data.Dataset) (*Input, error) {
	res, err := ReadRunFile(path)
	if err != nil {
		return nil, err
	}
	in := &Input{Name: path, Saved: make(map[int]rank.Ranking, len(res))}
	for _, r := range res {
		q, ok := d.QueryIndex[r.Query]
		if !ok {
			return nil, fmt.Errorf("%s: query id %q is not a query of dataset %s", path, r.Query, d.Name)
		}
		rk := rank.Ranking{Tools: make([]int, len(r.Docs)), Scores: r.Scores}
		for j, doc := range r.Docs {
			t, ok := d.ToolIndex[doc]
			if !ok {
				return nil, fmt.Errorf("%s: query %q: document id %q is not a tool of dataset %s", path, r.Query, doc, d.Name)
			}
			rk.Tools[j] = t
		}
		in.Saved[q] = rk
	}
	return in, nil
}

// Ranker is a rank.QueryRanker fusing the top Depth tools of each input per query: by
// RRF with constant K when W, G and A are nil, by Interpolate with weights W (one per input)
// and normalisation Norm, when G is set by InterpolateGrouped with G's weights per tool
// group, or, when A is set, by InterpolateAdaptive of its two inputs (dense first) at A's
// per-query dense weight.
type Ranker struct {
	Inputs []*Input
	Depth  int
	K      float64
	Norm   rerank.Norm
	W      []float64
	G      *Grouped
	A      *Adaptive
}

// Lists returns, per query of qs, every input's top Depth tools, in input order.
func (f *Ranker) Lists(ctx context.Context, qs []rank.Query) ([][]rank.Ranking, error) {
	per := make([][]rank.Ranking, len(qs))
	for i := range per {
		per[i] = make([]rank.Ranking, len(f.Inputs))
	}
	for j, in := range f.Inputs {
		rk, err := in.Rank(ctx, qs, f.Depth)
		if err != nil {
			return nil, err
		}
		for i := range qs {
			per[i][j] = rk[i]
		}
	}
	return per, nil
}

// RankQueries implements rank.QueryRanker: each query's fused ranking, its top k.
func (f *Ranker) RankQueries(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	per, err := f.Lists(ctx, qs)
	if err != nil {
		return nil, err
	}
	out := make([]rank.Ranking, len(qs))
	for i, lists := range per {
		var r rank.Ranking
		switch {
		case f.A != nil:
			if len(lists) != 2 {
				return nil, fmt.Errorf("fusion: an adaptive weight fuses two inputs (dense, lexical), not %d", len(lists))
			}
			r, err = InterpolateAdaptive(lists[0], lists[1], *f.A, f.Norm)
		case f.G != nil:
			r, err = InterpolateGrouped(lists, f.G, f.Norm)
		case f.W == nil:
			r, err = RRF(lists, f.K)
		default:
			r, err = Interpolate(lists, f.W, f.Norm)
		}
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", qs[i].Text, err)
		}
		if k > 0 && len(r.Tools) > k {
			r = rank.Ranking{Tools: r.Tools[:k], Scores: r.Scores[:k]}
		}
		out[i] = r
	}
	return out, nil
}

// TuneOptions are how Ranker.Tune searches the interpolation weights.
type TuneOptions struct {
	// Steps is the grid's resolution: weights in multiples of 1/Steps (Grid).
	Steps int
	// Metric names the dev metric in the report; Score computes it for one query
	// (metrics.ParseMetric(Metric)).
	Metric string
	Score  func(ranked, relevant []int) float64
	// Log receives one line with every grid point's dev value (nil: none).
	Log io.Writer
}

// Tune returns the interpolation weights (Grid(len(f.Inputs), o.Steps)) that maximise the
// metric on the dev queries qs, whose relevant tools are relevant (Choose), with f.Norm.
func (f *Ranker) Tune(ctx context.Context, qs []rank.Query, relevant [][]int, o TuneOptions) ([]float64, error) {
	per, err := f.Lists(ctx, qs)
	if err != nil {
		return nil, fmt.Errorf("dev split: %w", err)
	}
	grid := Grid(len(f.Inputs), o.Steps)
	best, means, err := Choose(per, relevant, f.Norm, grid, o.Score)
	if err != nil {
		return nil, err
	}
	if o.Log != nil {
		curve := make([]string, len(grid))
		for i, w := range grid {
			curve[i] = fmt.Sprintf("%s:%.2f", weights(w), 100*means[i])
		}
		fmt.Fprintf(o.Log, "fusion: %s: dev %s (%d queries) by weights %s\n", f.Norm, o.Metric, len(qs), strings.Join(curve, " "))
	}
	return best, nil
}

// TuneGrouped returns grouped weights (ChooseGrouped over Grid(len(f.Inputs), o.Steps) and
// Offsets(f.Norm)) for the new tools marked in isNew, picked on the dev queries qs whose
// relevant tools are relevant; the metric is computed on each ranking's first depth tools
// (the metric's cutoff; <= 0: all).
func (f *Ranker) TuneGrouped(ctx context.Context, qs []rank.Query, relevant [][]int, isNew []bool, depth int, o TuneOptions) (*GroupedChoice, error) {
	per, err := f.Lists(ctx, qs)
	if err != nil {
		return nil, fmt.Errorf("dev split: %w", err)
	}
	c, err := ChooseGrouped(per, relevant, f.Norm, Grid(len(f.Inputs), o.Steps), Offsets(f.Norm), isNew, depth, o.Score)
	if err != nil {
		return nil, err
	}
	if o.Log != nil {
		n := 0
		for _, b := range isNew {
			if b {
				n++
			}
		}
		fmt.Fprintf(o.Log, "fusion: %s: dev %s (%d queries): one set of weights %s: %.2f; trained tools %s, the %d new tools %s %+g: %.2f\n",
			f.Norm, o.Metric, len(qs), weights(c.Plain), 100*c.PlainMean, weights(c.W), n, weights(c.NewW), c.Offset, 100*c.Mean)
	}
	return c, nil
}

// TuneAdaptive learns an adaptive dense weight (ChooseAdaptive over AdaptiveGrid) for
// f's two inputs, dense first, on the dev queries qs whose relevant tools are relevant and
// whose libraries are groups: the macro mean over libraries, each counting once. names labels
// the groups in the log line (nil: their ids).
func (f *Ranker) TuneAdaptive(ctx context.Context, qs []rank.Query, relevant [][]int, groups []int, names []string, o TuneOptions) (*AdaptiveChoice, error) {
	if len(f.Inputs) != 2 {
		return nil, fmt.Errorf("fusion: an adaptive weight fuses two inputs (dense, lexical), not %d", len(f.Inputs))
	}
	per, err := f.Lists(ctx, qs)
	if err != nil {
		return nil, fmt.Errorf("dev split: %w", err)
	}
	bases, slopes := AdaptiveGrid()
	c, err := ChooseAdaptive(per, relevant, groups, f.Norm, bases, slopes, o.Score)
	if err != nil {
		return nil, err
	}
	if o.Log != nil {
		ids := make([]int, 0, len(c.Groups))
		for g := range c.Groups {
			ids = append(ids, g)
		}
		sort.Ints(ids)
		libs := make([]string, len(ids))
		for i, g := range ids {
			name := strconv.Itoa(g)
			if g >= 0 && g < len(names) && names[g] != "" {
				name = names[g]
			}
			libs[i] = fmt.Sprintf("%s %.2f/%.2f", name, 100*c.Groups[g], 100*c.FixedGroups[g])
		}
		fmt.Fprintf(o.Log, "fusion: %s: adaptive dense weight %s: dev %s macro over %d libraries %.2f, best fixed weight %g %.2f (%d queries; by library, adaptive/fixed: %s)\n",
			f.Norm, c.Describe(), o.Metric, len(ids), 100*c.Mean, c.Fixed, 100*c.FixedMean, len(qs), strings.Join(libs, ", "))
	}
	return c, nil
}

// weights formats a weight vector as 0.3/0.2/0.5.
func weights(w []float64) string {
	ws := make([]string, len(w))
	for j, x := range w {
		ws[j] = strconv.FormatFloat(x, 'g', 3, 64)
	}
	return strings.Join(ws, "/")
}

// SplitQueries returns the judged queries of split s of d as queries to rank, with their
// relevant tools (what Tune tunes on, for a dev split).
func SplitQueries(d *data.Dataset, s *data.Split) ([]rank.Query, [][]int) {
	judged := s.Judged()
	qs := make([]rank.Query, len(judged))
	rel := make([][]int, len(judged))
	for i, q := range judged {
		qs[i] = rank.Query{Index: q, Text: d.Queries[q].Text}
		rel[i] = s.Relevant[q]
	}
	return qs, rel
}
