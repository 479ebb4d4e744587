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
	"github.com/toolret/toolret/rank"
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

// buildFusion builds -method fusion on d, a dataset already loaded: the library's fusion
// (fusionConfig) and its description.
func buildFusion(o *options, d *data.Dataset) (rank.QueryRanker, string, error) {
	cfg, err := fusionConfig(o)
	if err != nil {
		return nil, "", err
	}
	ev, err := toolret.NewEvaluationOn(context.Background(), cfg, d)
	if err != nil {
		return nil, "", err
	}
	o.evals = append(o.evals, ev)
	printServeHint(o, ev, cfg.Fuse)
	return ev.Ranker, ev.Method, nil
}

// printServeHint prints on stderr how to serve the fusion of items ev sets up (serveHint),
// unless -json.
func printServeHint(o *options, ev *toolret.Evaluation, items []string) {
	if f, ok := ev.Ranker.(*fusion.Ranker); ok && f.G == nil && !o.asJSON {
		if hint := serveHint(items, string(f.Norm), f.W, f.K); hint != "" {
			fmt.Fprintln(os.Stderr, hint)
		}
	}
}

// fusionConfig turns the flags of -method fusion into the library's configuration
// (toolret.EvalConfig.Fuse): the rankings -runs names, fused by the method -fusion names; with
// -fusion minmax|zscore and -weight dev the weights are picked on the recorded dev split.
func fusionConfig(o *options) (toolret.EvalConfig, error) {
	fo := &o.fu
	items := splitRuns(fo.runs)
	if len(items) == 0 {
		return toolret.EvalConfig{}, fmt.Errorf("-method fusion needs -runs A,B[,...]: methods (bm25), run:RUN or run files (-save-run)")
	}
	cfg := baseConfig(o)
	cfg.Fuse, cfg.FusionDepth, cfg.FusionK, cfg.BM25, cfg.Vectors = items, o.k, fo.rrfK, &o.bm25, o.vectors
	cfg.Lengths, cfg.Quantize, cfg.SplitRun = o.lengths, o.quantize, o.rr.retriever
	switch method := fusionMethod(o); method {
	case "rrf":
		if fo.weightGiven {
			return cfg, fmt.Errorf("-weight applies to -fusion minmax or zscore, not rrf (-rrf-k)")
		}
		if fo.newTools {
			return cfg, fmt.Errorf("-new-tool-weights applies to -fusion minmax or zscore, not rrf")
		}
		cfg.Fusion = method
	case "minmax", "zscore":
		cfg.Fusion = method
		if o.rr.weight == "dev" {
			cfg.FusionDev, cfg.FusionSteps, cfg.FusionMetric, cfg.FusionNewTools = true, fo.steps, o.rr.gridMetric, fo.newTools
			break
		}
		if o.rr.weight == "adaptive" || strings.HasPrefix(o.rr.weight, "adaptive:") {
			if fo.newTools {
				return cfg, fmt.Errorf("-new-tool-weights and -weight %s: one or the other", o.rr.weight)
			}
			if len(items) != 2 {
				return cfg, fmt.Errorf("-weight %s fuses two -runs, the dense ranking then the lexical one (e.g. -runs model:DIR,bm25), not %d", o.rr.weight, len(items))
			}
			if rule, ok := strings.CutPrefix(o.rr.weight, "adaptive:"); ok {
				a, err := fusion.ParseAdaptive(rule)
				if err != nil {
					return cfg, fmt.Errorf("-weight: %w", err)
				}
				cfg.FusionAdapt = &a
				break
			}
			cfg.FusionAdaptive, cfg.FusionMetric = true, o.rr.gridMetric
			break
		}
		if fo.newTools {
			return cfg, fmt.Errorf("-new-tool-weights picks its weights on dev: use it with -weight dev")
		}
		w, err := parseFusionWeights(o.rr.weight, len(items))
		if err != nil {
			return cfg, err
		}
		cfg.FusionWeights = w
	default:
		return cfg, fmt.Errorf("-fusion %q: want zscore, minmax or rrf", method)
	}
	for _, it := range items {
		if ref, ok := strings.CutPrefix(it, "model:"); ok {
			if _, err := modelDir(ref); err != nil {
				return cfg, fmt.Errorf("-runs %s: %w", it, err)
			}
		}
	}
	return cfg, nil
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

// modelDir resolves a model:REF of -runs or -compare (a HF or sentence-transformers
// directory or hub id) to its directory.
func modelDir(ref string) (string, error) {
	if ref == "" {
		return "", fmt.Errorf("model: needs a model directory or hub id")
	}
	dir, err := hub.Resolve(context.Background(), ref)
	if err != nil {
		return "", err
	}
	if !export.IsHFDir(dir) {
		return "", fmt.Errorf("%s is not a pre-trained model directory (a trained run is run:RUN)", dir)
	}
	return dir, nil
}

// joinWeights formats weights as 0.3,0.2,0.5.
func joinWeights(w []float64) string {
	ws := make([]string, len(w))
	for i, x := range w {
		ws[i] = strconv.FormatFloat(x, 'g', 4, 64)
	}
	return strings.Join(ws, ",")
}
