package evalcmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/rundir"
)

// fusionOptions are the flags of -method fusion (the weights are -weight's, the dev metric
// -grid-metric's).
type fusionOptions struct {
	runs, method string // -runs, -fusion
	rrfK         float64
	steps        int  // -fusion-steps: the dev grid's resolution
	weightGiven  bool // -weight was given
	newTools     bool // -new-tool-weights
}

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

// buildFusion builds the inputs -runs names and the fusion -fusion names; with
// -fusion minmax|zscore and -weight dev it picks the weights on the dev split (devSplit).
func buildFusion(o *options, d *data.Dataset) (rank.QueryRanker, string, error) {
	fo := &o.fu
	items := splitRuns(fo.runs)
	if len(items) == 0 {
		return nil, "", fmt.Errorf("-method fusion needs -runs A,B[,...]: methods (bm25), run:RUN or TREC run files")
	}
	f := &fusion.Ranker{Depth: o.k, K: fo.rrfK}
	tune := false
	switch method := fusionMethod(o); method {
	case "rrf":
		if fo.weightGiven {
			return nil, "", fmt.Errorf("-weight applies to -fusion minmax or zscore, not rrf (-rrf-k)")
		}
		if fo.newTools {
			return nil, "", fmt.Errorf("-new-tool-weights applies to -fusion minmax or zscore, not rrf")
		}
	case "minmax", "zscore":
		f.Norm = rerank.Norm(method)
		tune = o.rr.weight == "dev"
		if fo.newTools && !tune {
			return nil, "", fmt.Errorf("-new-tool-weights picks its weights on dev: use it with -weight dev")
		}
		if !tune {
			w, err := parseFusionWeights(o.rr.weight, len(items))
			if err != nil {
				return nil, "", err
			}
			f.W = w
		}
	default:
		return nil, "", fmt.Errorf("-fusion %q: want zscore, minmax or rrf", method)
	}
	// The dev split the weights are tuned on: a run:RUN input must not have trained on it,
	// and its usage vectors come from its recorded training part only.
	var devMeta *rundir.Meta
	var trainPart, devPart *data.Split
	if tune || isDevSplit(o, d) {
		var err error
		if trainPart, devPart, devMeta, err = devSplit(o, d); err != nil {
			return nil, "", fmt.Errorf("-method fusion: %w", err)
		}
	}
	for _, it := range items {
		in, err := fusionInput(o, d, "-runs", fo.runs, it, devMeta)
		if err != nil {
			return nil, "", err
		}
		if in.Live != nil { // a multi-source dataset: each input ranks within the query's library
			in.Live = metrics.WithinLibraries(d, nil, in.Live)
		}
		f.Inputs = append(f.Inputs, in)
	}
	desc := fmt.Sprintf("fusion rrf (k=%g) of %s", f.K, strings.Join(items, ", "))
	if tune {
		score, err := metrics.ParseMetric(o.rr.gridMetric)
		if err != nil {
			return nil, "", fmt.Errorf("-grid-metric: %w", err)
		}
		qs, rel := fusion.SplitQueries(d, devPart)
		if fo.newTools {
			isNew, n := fusion.NewTools(d, trainPart)
			if n == 0 {
				return nil, "", fmt.Errorf("-new-tool-weights: every tool of %s has a query in the dev run's training part: no new tools to weigh apart", d.Name)
			}
			c, err := f.TuneGrouped(context.Background(), qs, rel, isNew, metricDepth(o.rr.gridMetric), fusion.TuneOptions{Steps: fo.steps, Metric: o.rr.gridMetric, Score: score, Log: os.Stderr})
			if err != nil {
				return nil, "", err
			}
			f.G = &c.Grouped
			desc = fmt.Sprintf("fusion %s of %s, weights on dev: trained tools %s, the %d new tools %s %+g", f.Norm, strings.Join(items, ", "), joinWeights(c.W), n, joinWeights(c.NewW), c.Offset)
			return f, desc, nil
		}
		w, err := f.Tune(context.Background(), qs, rel, fusion.TuneOptions{Steps: fo.steps, Metric: o.rr.gridMetric, Score: score, Log: os.Stderr})
		if err != nil {
			return nil, "", err
		}
		f.W = w
	}
	if f.W != nil {
		how := ""
		if tune {
			how = " on dev"
		}
		desc = fmt.Sprintf("fusion %s of %s, weights %s%s", f.Norm, strings.Join(items, ", "), joinWeights(f.W), how)
	}
	if hint := serveHint(items, string(f.Norm), f.W, f.K); hint != "" && !o.asJSON {
		fmt.Fprintln(os.Stderr, hint)
	}
	return f, desc, nil
}

// serveHint returns how to serve a fusion of trained runs alone (every item run:RUN) as an
// ensemble of their exported indexes; "" for any other fusion, or RRF with a k other than
// serve's.
func serveHint(items []string, norm string, w []float64, k float64) string {
	if len(w) == 0 && k != fusion.DefaultK {
		return ""
	}
	var dirs []string
	for _, it := range items {
		dir, ok := strings.CutPrefix(it, "run:")
		if !ok {
			return ""
		}
		name := strings.TrimPrefix(filepath.ToSlash(filepath.Clean(dir)), "runs/")
		dirs = append(dirs, strings.ReplaceAll(strings.Trim(name, "./"), "/", "-"))
	}
	idx := func(d string) string { return "idx-" + d }
	var members []string
	for _, d := range dirs[1:] {
		members = append(members, idx(d))
	}
	h := fmt.Sprintf("eval: to serve this fusion, export each run (export -run RUN -format index -out idx-NAME), then: serve -index %s -ensemble %s", idx(dirs[0]), strings.Join(members, ","))
	if len(w) > 0 {
		h += fmt.Sprintf(" -ensemble-fusion %s -ensemble-weights %s", norm, joinWeights(w))
	}
	return h
}

// fusionInput builds one entry it of the list -runs (or -compare: flag) names: a method,
// run:RUN or a TREC run file, labelled "flag it" in errors. With dev set (tuning or
// evaluating on a recorded dev split) a run:RUN must have held out every dev query, and a
// bi-encoder's usage vectors use its recorded training part.
func fusionInput(o *options, d *data.Dataset, flag, list, it string, dev *rundir.Meta) (*fusion.Input, error) {
	label := flag + " " + it
	if dir, ok := strings.CutPrefix(it, "run:"); ok {
		if dir == "" {
			return nil, fmt.Errorf("%s %q: run: needs a run directory", flag, it)
		}
		var train *data.Split
		if dev != nil {
			if err := rundir.CheckDev(label, dir, d, dev.Split); err != nil {
				return nil, err
			}
			var err error
			if train, _, _, err = rundir.Splits(rundir.RunOf(dir), d); err != nil {
				return nil, fmt.Errorf("%s: %w", label, err)
			}
		}
		r, _, err := buildRunAt(o, d, dir, train)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		return &fusion.Input{Name: label, Live: r}, nil
	}
	if ref, ok := strings.CutPrefix(it, "model:"); ok {
		r, err := fusionModel(o, d, ref)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		return &fusion.Input{Name: label, Live: r}, nil
	}
	switch it {
	case "bm25":
		r, _, err := buildBM25(o, d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		return &fusion.Input{Name: label, Live: r}, nil
	case "fusion", "rerank", "rerank-m":
		return nil, fmt.Errorf("%s %q: fuse its saved rankings instead (-method %s -save-run FILE, then FILE in -runs)", flag, it, it)
	}
	if it == "" {
		return nil, fmt.Errorf("%s %q: empty entry", flag, list)
	}
	in, err := fusion.ReadInput(it, d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	in.Name = label
	return in, nil
}

// fusionModel ranks with a pre-trained model zero-shot (model:REF in -runs: a HF or
// sentence-transformers directory or hub id), as -model REF ranks, its default prompts.
func fusionModel(o *options, d *data.Dataset, ref string) (rank.QueryRanker, error) {
	if ref == "" {
		return nil, fmt.Errorf("model: needs a model directory or hub id")
	}
	dir, err := hub.Resolve(context.Background(), ref)
	if err != nil {
		return nil, err
	}
	if !export.IsHFDir(dir) {
		return nil, fmt.Errorf("%s is not a pre-trained model directory (a trained run is run:RUN)", dir)
	}
	cfg := toolret.EvalConfig{Data: o.data, Backend: o.backend, Quantize: o.quantize, Model: dir, Lengths: o.lengths, NoRecipe: true} // the fusion is -runs'
	// The ranker ranks any query of d: it is set up on a split of d.
	if _, ok := d.Splits[o.split]; ok {
		cfg.Split = o.split
	} else if names := d.SplitNames(); len(names) > 0 {
		cfg.Split = names[0]
	}
	e, err := toolret.NewEvaluationOn(context.Background(), cfg, d)
	if err != nil {
		return nil, err
	}
	o.evals = append(o.evals, e)
	return e.Ranker, nil
}

// metricDepth is the cutoff K of a metric named like "ndcg@5" (0, all, when it has none).
func metricDepth(metric string) int {
	_, k, ok := strings.Cut(metric, "@")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(k)
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// joinWeights formats weights as 0.3,0.2,0.5.
func joinWeights(w []float64) string {
	ws := make([]string, len(w))
	for i, x := range w {
		ws[i] = strconv.FormatFloat(x, 'g', 4, 64)
	}
	return strings.Join(ws, ",")
}
