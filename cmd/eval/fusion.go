package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/rundir"
)

// fusionOptions are the flags of -method fusion (the weights are -weight's, the dev metric
// -grid-metric's).
type fusionOptions struct {
	runs, method string // -runs, -fusion
	rrfK         float64
	steps        int  // -fusion-steps: the dev grid's resolution
	weightGiven  bool // -weight was given
}

// input is one ranking to fuse: a live ranker (a method or a trained run), or the rankings
// of a TREC run file by query index.
type input struct {
	name string
	live retrieve.QueryRanker
	file map[int]retrieve.Ranking
}

// rank returns the top k tools of each query of qs.
func (in *input) rank(ctx context.Context, qs []retrieve.Query, k int) ([]retrieve.Ranking, error) {
	if in.live != nil {
		rk, err := in.live.RankQueries(ctx, qs, k)
		if err == nil && len(rk) != len(qs) {
			err = fmt.Errorf("%d rankings for %d queries", len(rk), len(qs))
		}
		if err != nil {
			return nil, fmt.Errorf("-runs %s: %w", in.name, err)
		}
		return rk, nil
	}
	out := make([]retrieve.Ranking, len(qs))
	missing := 0
	first := ""
	for i, q := range qs {
		r, ok := in.file[q.Index]
		if !ok {
			if missing == 0 {
				first = strconv.Quote(q.Text)
			}
			missing++
			continue
		}
		if k > 0 && len(r.Tools) > k {
			r = retrieve.Ranking{Tools: r.Tools[:k], Scores: r.Scores[:k]}
		}
		out[i] = r
	}
	if missing > 0 {
		return nil, fmt.Errorf("-runs %s: no ranking for %d of the %d queries asked (first: %s): save the run on the same split and data (-split, -holdout-tools)", in.name, missing, len(qs), first)
	}
	return out, nil
}

// readRunInput reads a TREC run file as rankings of d's queries and tools: an unknown query
// or tool id is an error naming it.
func readRunInput(path string, d *data.Dataset) (*input, error) {
	res, err := fusion.ReadRunFile(path)
	if err != nil {
		return nil, fmt.Errorf("-runs: %w", err)
	}
	in := &input{name: path, file: make(map[int]retrieve.Ranking, len(res))}
	for _, r := range res {
		q, ok := d.QueryIndex[r.Query]
		if !ok {
			return nil, fmt.Errorf("-runs %s: query id %q is not a query of dataset %s", path, r.Query, d.Name)
		}
		rk := retrieve.Ranking{Tools: make([]int, len(r.Docs)), Scores: r.Scores}
		for j, doc := range r.Docs {
			t, ok := d.ToolIndex[doc]
			if !ok {
				return nil, fmt.Errorf("-runs %s: query %q: document id %q is not a tool of dataset %s", path, r.Query, doc, d.Name)
			}
			rk.Tools[j] = t
		}
		in.file[q] = rk
	}
	return in, nil
}

// fused is the QueryRanker of -method fusion.
type fused struct {
	inputs []*input
	depth  int         // the tools each input ranks per query (-k)
	rrfK   float64     // RRF when w is nil
	norm   rerank.Norm // interpolation
	w      []float64
}

// lists returns, per query of qs, every input's top depth tools.
func (f *fused) lists(ctx context.Context, qs []retrieve.Query) ([][]retrieve.Ranking, error) {
	per := make([][]retrieve.Ranking, len(qs))
	for i := range per {
		per[i] = make([]retrieve.Ranking, len(f.inputs))
	}
	for j, in := range f.inputs {
		rk, err := in.rank(ctx, qs, f.depth)
		if err != nil {
			return nil, err
		}
		for i := range qs {
			per[i][j] = rk[i]
		}
	}
	return per, nil
}

func (f *fused) RankQueries(ctx context.Context, qs []retrieve.Query, k int) ([]retrieve.Ranking, error) {
	per, err := f.lists(ctx, qs)
	if err != nil {
		return nil, err
	}
	out := make([]retrieve.Ranking, len(qs))
	for i, lists := range per {
		var r retrieve.Ranking
		if f.w == nil {
			r, err = fusion.RRF(lists, f.rrfK)
		} else {
			r, err = fusion.Interpolate(lists, f.w, f.norm)
		}
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", qs[i].Text, err)
		}
		if k > 0 && len(r.Tools) > k {
			r = retrieve.Ranking{Tools: r.Tools[:k], Scores: r.Scores[:k]}
		}
		out[i] = r
	}
	return out, nil
}

// buildFusion builds the inputs -runs names and the fusion -fusion names; with
// -fusion minmax|zscore and -weight dev it picks the weights on the dev split (devSplit).
func buildFusion(o *options, d *data.Dataset) (retrieve.QueryRanker, string, error) {
	fo := &o.fu
	items := splitRuns(fo.runs)
	if len(items) == 0 {
		return nil, "", fmt.Errorf("-method fusion needs -runs A,B[,...]: methods (bm25), run:RUN or TREC run files")
	}
	f := &fused{depth: o.k, rrfK: fo.rrfK}
	tune := false
	switch method := fusionMethod(o); method {
	case "rrf":
		if fo.weightGiven {
			return nil, "", fmt.Errorf("-weight applies to -fusion minmax or zscore, not rrf (-rrf-k)")
		}
	case "minmax", "zscore":
		f.norm = rerank.Norm(method)
		tune = o.rr.weight == "dev"
		if !tune {
			w, err := parseFusionWeights(o.rr.weight, len(items))
			if err != nil {
				return nil, "", err
			}
			f.w = w
		}
	default:
		return nil, "", fmt.Errorf("-fusion %q: want rrf, minmax or zscore", fo.method)
	}
	// The dev split the weights are tuned on: a run:RUN input must not have trained on it,
	// and its usage vectors come from its recorded training part only.
	var devMeta *rundir.Meta
	var devPart *data.Split
	if tune || isDevSplit(o, d) {
		var err error
		if _, devPart, devMeta, err = devSplit(o, d); err != nil {
			return nil, "", fmt.Errorf("-method fusion: %w", err)
		}
	}
	for _, it := range items {
		in, err := fusionInput(o, d, it, devMeta)
		if err != nil {
			return nil, "", err
		}
		f.inputs = append(f.inputs, in)
	}
	names := make([]string, len(f.inputs))
	for i, in := range f.inputs {
		names[i] = in.name
	}
	desc := fmt.Sprintf("fusion rrf (k=%g) of %s", f.rrfK, strings.Join(names, ", "))
	if tune {
		w, err := tuneFusion(o, d, f, devPart)
		if err != nil {
			return nil, "", err
		}
		f.w = w
	}
	if f.w != nil {
		ws := make([]string, len(f.w))
		for i, x := range f.w {
			ws[i] = strconv.FormatFloat(x, 'g', 4, 64)
		}
		how := ""
		if tune {
			how = " on dev"
		}
		desc = fmt.Sprintf("fusion %s of %s, weights %s%s", f.norm, strings.Join(names, ", "), strings.Join(ws, ","), how)
	}
	return f, desc, nil
}

// fusionInput builds one -runs entry. With dev set (tuning or evaluating on a recorded dev
// split) a run:RUN must have held out every dev query, and a bi-encoder's usage vectors use
// its recorded training part.
func fusionInput(o *options, d *data.Dataset, it string, dev *rundir.Meta) (*input, error) {
	if dir, ok := strings.CutPrefix(it, "run:"); ok {
		if dir == "" {
			return nil, fmt.Errorf("-runs %q: run: needs a run directory", it)
		}
		var train *data.Split
		if dev != nil {
			if err := checkDev("runs "+it, dir, d, dev.Split); err != nil {
				return nil, err
			}
			var err error
			if train, _, _, err = rundir.Splits(rundir.RunOf(dir), d); err != nil {
				return nil, fmt.Errorf("-runs %s: %w", it, err)
			}
		}
		r, _, err := buildRunAt(o, d, dir, train)
		if err != nil {
			return nil, fmt.Errorf("-runs %s: %w", it, err)
		}
		return &input{name: it, live: r}, nil
	}
	switch it {
	case "bm25":
		r, _, err := buildBM25(o, d)
		if err != nil {
			return nil, fmt.Errorf("-runs %s: %w", it, err)
		}
		return &input{name: it, live: r}, nil
	case "fusion", "rerank", "rerank-m":
		return nil, fmt.Errorf("-runs %q: fuse its saved rankings instead (-method %s -save-run FILE, then FILE in -runs)", it, it)
	}
	if it == "" {
		return nil, fmt.Errorf("-runs %q: empty entry", o.fu.runs)
	}
	return readRunInput(it, d)
}

// tuneFusion picks the interpolation weights (fusion.Grid in steps of 1/-fusion-steps) that maximise
// -grid-metric on the dev queries and reports every weight's dev value on stderr.
func tuneFusion(o *options, d *data.Dataset, f *fused, dev *data.Split) ([]float64, error) {
	score, err := metricFn(o.rr.gridMetric)
	if err != nil {
		return nil, fmt.Errorf("-grid-metric: %w", err)
	}
	judged := dev.Judged()
	qs := make([]retrieve.Query, len(judged))
	rel := make([][]int, len(judged))
	for i, q := range judged {
		qs[i] = retrieve.Query{Index: q, Text: d.Queries[q].Text}
		rel[i] = dev.Relevant[q]
	}
	per, err := f.lists(context.Background(), qs)
	if err != nil {
		return nil, fmt.Errorf("dev split: %w", err)
	}
	grid := fusion.Grid(len(f.inputs), o.fu.steps)
	best, means, err := fusion.Choose(per, rel, f.norm, grid, score)
	if err != nil {
		return nil, err
	}
	curve := make([]string, len(grid))
	for i, w := range grid {
		ws := make([]string, len(w))
		for j, x := range w {
			ws[j] = strconv.FormatFloat(x, 'g', 3, 64)
		}
		curve[i] = fmt.Sprintf("%s:%.2f", strings.Join(ws, "/"), 100*means[i])
	}
	fmt.Fprintf(os.Stderr, "fusion: %s: dev %s (%d queries) by weights %s\n", f.norm, o.rr.gridMetric, len(qs), strings.Join(curve, " "))
	return best, nil
}
