// Package evalcmd is the `toolret eval` command; it evaluates a tool-retrieval method on a dataset split and prints Recall@K,
// NDCG@K and COMP@K (percent), overall and per subset.
//
//	eval [-data DIR] [-split test] [-method bm25 | -run RUN [-tool-vectors text|usage]] [-cutoffs 1,3,5,10] [-json] [-subsets]
//	eval -method rerank -first-stage RUN -reranker RUN -classifier RUN [-grid] [-m-seen 10 -m-unseen 30 -tau-s 0.8 -tau-m 0.8 -per-component 2]
//	     [-interpolate minmax|zscore|off] [-weight dev|W]
//	eval -method rerank-m -first-stage RUN -reranker RUN -depth 30 [-interpolate minmax|zscore|off] [-weight dev|W]
//	eval -method fusion -runs bm25,run:RUN[,FILE...] [-fusion zscore|minmax|rrf] [-rrf-k 60] [-weight dev|W|W1,W2,...] [-fusion-steps 10]
//	eval ... [-save-run FILE [-run-tag TAG]] [-k 100] [-holdout-tools F -holdout-seed N] [-split dev]
//	eval -model REF [-query-prompt P] [-tool-prompt P]   (a pre-trained model zero-shot, or a run)
//	eval -index DIR [-no-refiner]     (an exported index as toolindex.Load serves it)
//	eval -model DIR|-index DIR [-no-recipe]   (without the BM25 fusion, clauses and reranker of the model's recipe)
//	eval -model DIR|-index DIR -reranker CE [-depth 30] [-weight dev|W] [-interpolate minmax|off] [-split dev] [-first-stage RUN]
//	eval -index DIR -hybrid rrf|minmax|zscore [-hybrid-weight W]   (as serve -hybrid serves it)
//	eval -run RUN -feedback FILE [-iterations T]     (replay a collection's refinements: metrics per round)
//	eval -run RUN -rewriter prf -prf-model RUN [-prf-threshold 0.5] [-iterations 3] [-rewriter-k 10]   (live)
//	eval -compare A,B [-compare-samples 10000] [-seed 1]   (two rankings query by query: B − A, 95% interval, p)
//	eval -suite zeroshot|SET,... [-model REF | -run RUN | -index DIR | -method fusion -runs A,B] [-suite-models REF,...] [-no-start] [-json]
//
// -save-run writes the rankings of every evaluated query (the top -k) as a TREC run file, or
// ranx's JSON run when the name ends in .json (with -feedback or -rewriter, one per round: FILE.round<t>);
// -method fusion fuses such files and live methods (fusion.go). -holdout-tools evaluates on
// tools never seen in training (data.Dataset.HoldoutTools); a -run or -first-stage trained on a
// held-out-tool view selects that view itself. -split dev is the dev split a trained run
// recorded (-run, else -first-stage, else the first run:RUN of -runs).
//
// -run accepts bi-encoder runs and mlc classifier runs (the kind is read from the run's files).
// The rerank methods tune and evaluate with the dev split the -first-stage run recorded
// (run.json): the grid search never sees a query any stage trained on.
//
// -model REF evaluates a model reference: a run (as -run), or a pre-trained HuggingFace or
// sentence-transformers directory or hub id org/name[@revision] (resolved in the Hugging
// Face hub cache, downloaded when missing) zero-shot: its index over the dataset's tools is
// built as cmd/export -model REF -format index builds it and evaluated as -index evaluates
// one, with the model's "query"/"document" prompts unless -query-prompt/-tool-prompt, and
// the BM25 fusion of its recipe (toolret_recipe.json, export -hybrid) unless -hybrid or
// -no-recipe; an -index exported from such a model records the fusion and applies it alike.
// The recipe's clauses and cross-encoder reranker are applied after the fusion, the reranker
// over each query's ranking within its library. -reranker CE with -model or -index replaces
// the recipe's reranker: CE reranks the top -depth, interpolated (minmax) at -weight W, or
// with -weight dev (the default) at the weight picked on the dev split (the dataset's split
// named dev, else the one -first-stage RUN recorded) as rerank-m picks it, printed as one
// line, "rerank weight 0.4 (dev ndcg@5 61.23 over 120 queries, depth 30)", for export
// -recipe-reranker CE -recipe-rerank-depth 30 -recipe-rerank-weight 0.4 to record.
//
// -suite zeroshot evaluates on every zero-shot test set at once (toolret.Suite, suite.go): BM25,
// the system given, the pre-trained model a -run started from, and -suite-models, each on
// bfcl and zeroshot/* of -suite-dir, printed as Markdown tables (a row per set and the mean).
//
// Without -data it uses the embedded default dataset.
//
// The command parses flags and prints; the evaluation is the library's. One ranking
// evaluated (-method bm25, rerank, rerank-m or fusion, -run, -model, -index, with -clauses)
// is a toolret.EvalConfig (the rerank methods its Rerank, an evaluate.RerankConfig; fusion
// its Fuse, with FusionDev for -weight dev) that toolret.NewEvaluation sets up, as
// toolret.Evaluate does; -feedback and -rewriter are its Feedback and Rewriter, evaluated by
// toolret.EvaluateRounds; -ablations is toolret.EvaluateAblations of its Rerank; -compare is
// a toolret.CompareConfig that toolret.Compare runs; -suite is toolret.Suite.
package evalcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/metrics"
)

// methods are the values of -method, with what each evaluates (evalConfig turns it into the
// library's configuration).
var methods = map[string]string{
	"bm25":     "Okapi BM25 over tool texts",
	"rerank":   "ToolRerank (needs -first-stage, -reranker, -classifier)",
	"rerank-m": "cross-encoder reranking of the retriever's top -depth (needs -first-stage, -reranker)",
	"fusion":   "fusion of rankings (needs -runs; -fusion rrf|minmax|zscore)",
}

func methodNames() string {
	var n []string
	for k := range methods {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

// Main runs `toolret eval` with args (the words after it) and returns the exit code.
func Main(args []string) int {
	o, err := parse(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = run(o, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		return 2
	}
	return 0
}

// run evaluates with the options and writes the result to w.
func run(o *options, w io.Writer) error {
	if o.suite.sets != "" {
		return runSuite(o, w)
	}
	if o.clauses.On && (o.compare != "" || o.fb.active() || o.ablations) {
		return fmt.Errorf("-clauses applies to one ranking evaluated (-method, -model, -run, -index or -suite): not with -compare, -feedback, -refiner or -ablations")
	}
	if o.compare != "" {
		return runCompare(o, w)
	}
	if o.fb.active() {
		return runFeedback(o, w)
	}
	_, ok := methods[o.method]
	if o.model != "" {
		if o.method == "fusion" {
			return fmt.Errorf("-model evaluates one model: -method fusion fuses -runs")
		}
		ok = true // a pre-trained model, zero-shot
	} else if o.index != "" {
		if o.run != "" || o.method == "fusion" {
			return fmt.Errorf("-index evaluates an exported index: not with -run or -method fusion")
		}
		ok = true // an exported index
	} else if o.noRefiner {
		return fmt.Errorf("-no-refiner applies to -index")
	} else if o.noRecipe {
		return fmt.Errorf("-no-recipe applies to -model, -index and -suite")
	} else if o.hybrid != "" || o.hybridWeight != -1 {
		return fmt.Errorf("-hybrid and -hybrid-weight apply to -index (-method fusion -runs run:RUN,bm25 fuses a trained run)")
	}
	defer o.cleanup()
	if members, _, _, err := o.ens.Values(); err != nil {
		return err
	} else if len(members) > 0 && o.index == "" {
		return fmt.Errorf("-ensemble fuses -index with more exported indexes: give -index (-method fusion -runs fuses trained runs)")
	}
	if o.run != "" {
		if o.method == "fusion" {
			return fmt.Errorf("-method fusion fuses -runs: give the trained run as run:%s there, not -run", o.run)
		}
		ok = true // a trained run
	}
	if !ok {
		return fmt.Errorf("unknown -method %q (have %s)", o.method, methodNames())
	}
	if o.saveRun != "" && o.ablations {
		return fmt.Errorf("-save-run writes one method's rankings: not with -ablations")
	}
	ctx := context.Background()
	if o.ablations {
		return runAblations(o, w)
	}
	cfg, err := evalConfig(o)
	if err != nil {
		return err
	}
	ev, err := toolret.NewEvaluation(ctx, cfg)
	if err != nil {
		return err
	}
	defer ev.Close()
	if len(cfg.Fuse) > 0 {
		printServeHint(o, ev, cfg.Fuse)
	}
	if st := ev.Rerank; st != nil && st.Tuned {
		// One line to parse: with -json on stderr, beside the report.
		out := w
		if o.asJSON {
			out = os.Stderr
		}
		fmt.Fprintln(out, rerankLine(st))
	}
	return evaluateAndPrint(o, w, ev)
}

// rerankLine is the line eval prints for a reranker weight picked on dev: "rerank weight 0.4
// (dev ndcg@5 61.23 over 120 queries, depth 20)".
func rerankLine(st *toolret.RerankStage) string {
	return fmt.Sprintf("rerank weight %g (%s %s %.2f over %d queries, depth %d)", *st.Weight, st.DevSplit, st.Metric, 100*st.DevScore, st.DevQueries, st.Depth)
}

// evaluateAndPrint evaluates ev (its rankings saved with -save-run) and prints
// the report: a table, or JSON with -json.
func evaluateAndPrint(o *options, w io.Writer, ev *toolret.Evaluation) error {
	var rec *evaluate.Recorder
	if o.saveRun != "" {
		// what the metrics read: on a multi-source dataset, each query's own library's tools
		rec = &evaluate.Recorder{QueryRanker: metrics.WithinLibraries(ev.Data, nil, ev.Ranker), K: o.k}
		ev.Ranker = rec.Ranker()
	}
	start := time.Now()
	rep, err := ev.Run(context.Background())
	if err != nil {
		return err
	}
	ranked := time.Since(start)
	if rec != nil {
		if err := rec.Save(ev.Data, o.saveRun, runTag(o), os.Stderr); err != nil {
			return fmt.Errorf("-save-run: %w", err)
		}
	}
	if !o.subsets {
		rep.Subsets, rep.ToolRecall = nil, nil
	}
	if o.asJSON {
		return json.NewEncoder(w).Encode(rep)
	}
	fmt.Fprintf(w, "method %s; loaded in %v, ranked+evaluated %d queries in %v\n", ev.Method, ev.Loaded.Round(time.Millisecond), rep.Overall.N, ranked.Round(time.Millisecond))
	fmt.Fprint(w, rep)
	return nil
}

// baseConfig is the configuration of the flags every evaluation has: -data and its view,
// -split, -backend, -cutoffs, progress on stderr.
func baseConfig(o *options) toolret.EvalConfig {
	cfg := toolret.EvalConfig{Data: o.data, Split: o.split, Backend: o.backend, Cutoffs: o.ks, Log: os.Stderr}
	if o.holdoutGiven {
		cfg.Holdout = o.holdout
		if cfg.Holdout == nil { // -holdout-tools 0: the dataset's own splits
			cfg.Holdout = &data.Holdout{}
		}
	}
	return cfg
}

// evalConfig turns the flags of one ranking evaluated (-method bm25, rerank, rerank-m or
// fusion, -run, -model or -index) into the library's configuration (toolret.EvalConfig).
func evalConfig(o *options) (toolret.EvalConfig, error) {
	co, err := o.clauses.Options()
	if err != nil {
		return toolret.EvalConfig{}, err
	}
	if o.method == "fusion" && o.run == "" && o.model == "" && o.index == "" {
		cfg, err := fusionConfig(o)
		cfg.Clauses = co
		return cfg, err
	}
	cfg := baseConfig(o)
	cfg.Run, cfg.Model, cfg.Index, cfg.Prompts, cfg.Quantize = o.run, o.model, o.index, o.prompts, o.quantize
	cfg.NoRecipe, cfg.NoRefiner, cfg.Clauses = o.noRecipe, o.noRefiner, co
	if o.hybrid != "" || o.hybridWeight != -1 {
		hw, err := hybridWeight(o.hybrid, o.hybridWeight)
		if err != nil {
			return cfg, err
		}
		cfg.Hybrid = o.hybrid
		if o.hybridWeight != -1 {
			cfg.HybridWeight = &hw
		}
	}
	if cfg.Ensemble, cfg.EnsembleFusion, cfg.EnsembleWeights, err = o.ens.Values(); err != nil {
		return cfg, err
	}
	switch {
	case o.run != "":
		cfg.Vectors, cfg.Lengths = o.vectors, o.lengths
	case o.model != "":
		cfg.Lengths = o.lengths
	case o.index != "":
	case o.method == "rerank" || o.method == "rerank-m":
		rc, err := rerankConfig(o, o.method == "rerank-m")
		if err != nil {
			return cfg, err
		}
		cfg.Rerank, cfg.Vectors = &rc, o.vectors
	default:
		cfg.BM25 = &o.bm25
	}
	if cfg.Rerank == nil {
		cfg.SplitRun = o.rr.retriever // -first-stage: its dev split and view
	}
	if (o.model != "" || o.index != "") && o.rr.reranker != "" {
		if cfg.Reranker, err = modelRerank(o); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// modelRerank turns -reranker, -depth, -interpolate, -weight, -grid-metric and -min-t of
// -model or -index into the library's configuration: the cross-encoder reranking the model's
// ranking (after its recipe's fusion and clauses) in place of its recipe's reranker.
func modelRerank(o *options) (*toolret.ModelRerank, error) {
	r := &o.rr
	m := &toolret.ModelRerank{CrossEncoder: r.reranker, Depth: r.depth}
	switch r.interpolate {
	case "off", "":
		if o.fu.weightGiven {
			return nil, errors.New("-weight and -interpolate off: the cross-encoder's order alone has no weight; give one")
		}
		return m, nil
	case "minmax":
	default:
		return nil, fmt.Errorf("-interpolate %s: a model's reranker interpolates minmax, as serve and its recipe do (or off: the cross-encoder's order alone)", r.interpolate)
	}
	w, err := parseWeight(r.weight)
	if err != nil {
		return nil, err
	}
	if m.Weight = w; w == nil {
		m.Dev, m.Metric, m.MinT = true, r.gridMetric, &r.minT
	}
	return m, nil
}
