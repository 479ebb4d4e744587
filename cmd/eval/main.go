// Command eval evaluates a tool-retrieval method on a dataset split and prints Recall@K,
// NDCG@K and COMP@K (percent), overall and per subset.
//
//	eval [-data DIR] [-split test] [-method bm25 | -run RUN [-tool-vectors text|usage]] [-cutoffs 1,3,5,10] [-json] [-subsets]
//	eval -method rerank -retriever RUN -reranker RUN -classifier RUN [-grid] [-m-seen 10 -m-unseen 30 -tau-s 0.8 -tau-m 0.8 -per-component 2]
//	     [-interpolate minmax|zscore|off] [-weight dev|W]
//	eval -method rerank-m -retriever RUN -reranker RUN -depth 30 [-interpolate minmax|zscore|off] [-weight dev|W]
//	eval -method fusion -runs bm25,run:RUN[,FILE...] [-fusion zscore|minmax|rrf] [-rrf-k 60] [-weight dev|W|W1,W2,...] [-fusion-steps 10]
//	eval ... [-save-run FILE [-run-tag TAG]] [-k 100] [-holdout-tools F -holdout-seed N] [-split dev]
//	eval -model REF [-query-prompt P] [-tool-prompt P]   (a pre-trained model zero-shot, or a run)
//	eval -index DIR [-no-refiner]     (an exported index as retriever.Load serves it)
//	eval -index DIR -hybrid rrf|minmax|zscore [-hybrid-weight W]   (as serve -hybrid serves it)
//	eval -run RUN -feedback FILE [-iterations T]     (replay a collection's refinements: metrics per round)
//	eval -run RUN -refiner prf -prf-model RUN [-prf-threshold 0.5] [-iterations 3] [-refiner-k 10]   (live)
//	eval -compare A,B [-compare-samples 10000] [-seed 1]   (two rankings query by query: B − A, 95% interval, p)
//
// -save-run writes the rankings of every evaluated query (the top -k) as a TREC run file
// (with -feedback or -refiner, one per round: FILE.round<t>);
// -method fusion fuses such files and live methods (fusion.go). -holdout-tools evaluates on
// tools never seen in training (data.Dataset.HoldoutTools); a -run or -retriever trained on a
// held-out-tool view selects that view itself. -split dev is the dev split a trained run
// recorded (-run, else -retriever, else the first run:RUN of -runs).
//
// -run accepts bi-encoder runs and mlc classifier runs (the kind is read from the run's files).
// The rerank methods tune and evaluate with the dev split the -retriever run recorded
// (run.json): the grid search never sees a query any stage trained on.
//
// -model REF evaluates a model reference: a run (as -run), or a pre-trained HuggingFace or
// sentence-transformers directory or hub id org/name[@revision] (resolved in the Hugging
// Face hub cache, downloaded when missing) zero-shot: its index over the dataset's tools is
// built as cmd/export -model REF -format index builds it and evaluated as -index evaluates
// one, with the model's "query"/"document" prompts unless -query-prompt/-tool-prompt.
//
// Without -data it uses the embedded default dataset.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/retrieve/bm25"
	"github.com/toolret/toolret/rundir"
)

// options are the parsed flags of one eval invocation.
type options struct {
	data, split, method   string
	ks                    []int // -cutoffs
	asJSON, subsets       bool
	bm25                  bm25.Params
	run, vectors, backend string
	ablations             bool
	rr                    rerankOptions
	// holdout is the held-out-tool view -holdout-tools and -holdout-seed give (nil: none);
	// holdoutGiven is whether -holdout-tools was given.
	holdout      *data.Holdout
	holdoutGiven bool
	// k is how many tools a query's ranking keeps for -save-run and for fusion.
	k               int
	saveRun, runTag string
	fu              fusionOptions
	// fb: the iterative retrieval (-feedback FILE, -refiner prf; feedback.go).
	fb feedbackOptions
	// index: an exported index evaluated as retriever.Load serves it (index.go).
	index string
	// model: a pre-trained model directory (-model, resolved) evaluated zero-shot through an
	// index built in a temporary directory (model.go), with prompts.
	model     string
	prompts   export.Prompts
	tmp       []string
	noRefiner bool
	// hybrid, hybridWeight: -hybrid, -hybrid-weight (-1: not given) of -index.
	hybrid       string
	hybridWeight float64
	// compare: -compare A,B (compare.go), with compareSamples resamples seeded by seed.
	compare        string
	compareSamples int
	seed           uint64
}

// rerankOptions are the flags of the rerank methods.
type rerankOptions struct {
	retriever, reranker, classifier string
	mSeen, mUnseen, perComponent    int
	tauS, tauM                      float64
	depth                           int // rerank-m
	grid                            bool
	gridM, gridMetric               string
	noHierarchy, oracleType         bool
	only                            string
	interpolate, weight             string // -interpolate minmax|zscore|off, -weight dev|W
	minT                            float64
	// scorer replaces the -reranker cross-encoder (tests: a scorer with known scores).
	scorer pairScorer
}

// params returns the ToolRerank parameters the flags give.
func (r *rerankOptions) params() rerank.Params {
	return rerank.Params{MS: r.mSeen, MU: r.mUnseen, TauS: float32(r.tauS), TauM: float32(r.tauM), N: r.perComponent}
}

// parse parses eval's command line; usage and flag errors go to out.
func parse(args []string, out io.Writer) (*options, error) {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(out)
	var o options
	r := &o.rr
	dataDir := cli.Data(fs)
	runDir := cli.Run(fs, "evaluate a trained run (bi-encoder or mlc classifier), or one of its checkpoints, instead of -method")
	retriever := cli.Retriever(fs)
	be := cli.Backend(fs)
	cutoffs := cli.Cutoffs(fs)
	fs.StringVar(&o.split, "split", "test", "split to evaluate; dev: the dev split a trained run recorded (-run, else -retriever, else the first run:RUN of -runs), when the dataset has no split named dev")
	fs.StringVar(&o.method, "method", "bm25", "retrieval method: "+methodNames())
	fs.StringVar(&o.index, "index", "", "evaluate an exported index (cmd/export -format index) as retriever.Load serves it, with its packaged refiner, instead of -method")
	modelRef := fs.String("model", "", "evaluate a model: a pre-trained HuggingFace or sentence-transformers directory or hub id org/name[@revision] zero-shot (its index over the dataset's tools, as export -model builds it), or a run (as -run)")
	fs.Func("query-prompt", "-model: prefix put before every query (default: the model's \"query\" prompt)", func(s string) error { o.prompts.Query = &s; return nil })
	fs.Func("tool-prompt", "-model: prefix put before every tool text (default: the model's \"document\" prompt)", func(s string) error { o.prompts.Tool = &s; return nil })
	fs.BoolVar(&o.noRefiner, "no-refiner", false, "-index: its first stage alone, without its packaged refiner")
	fs.StringVar(&o.hybrid, "hybrid", "", "-index: its first stage fused with BM25 as serve -hybrid serves it: rrf, minmax or zscore")
	fs.Float64Var(&o.hybridWeight, "hybrid-weight", -1, "-index -hybrid minmax|zscore: the dense weight w in [0, 1] (-1: 0.5)")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object instead of a table")
	fs.BoolVar(&o.subsets, "subsets", false, "also print per-subset rows (number of relevant tools, seen/unseen)")
	fs.Float64Var(&o.bm25.K1, "bm25-k1", bm25.DefaultParams.K1, "BM25 k1")
	fs.Float64Var(&o.bm25.B, "bm25-b", bm25.DefaultParams.B, "BM25 b")
	fs.BoolVar(&o.bm25.Stopwords, "bm25-stopwords", false, "BM25: drop English stop words")
	fs.StringVar(&o.vectors, "tool-vectors", "text", "bi-encoder tool vectors: text (tool tower) or usage (Tool2Vec: mean embedding of the training queries using the tool; -run: every query of the train split, rerank: the -retriever run's training part, without its dev queries)")
	fs.BoolVar(&o.ablations, "ablations", false, "rerank: one table, with cross-encoder scores computed once: the bi-encoder alone, Rerank-10/30/50, ToolRerank and its ablations (no hierarchy, Alg. 1 only, Alg. 2 only, oracle query type), each ToolRerank row grid-searched on dev")
	fs.StringVar(&r.reranker, "reranker", "", "rerank: cross-encoder run (train crossencoder -retriever RUN: the same dev split)")
	fs.StringVar(&r.classifier, "classifier", "", "rerank: query-type classifier run (train classifier -kind querytype -retriever RUN: the same dev split)")
	fs.IntVar(&r.mSeen, "m-seen", rerank.DefaultParams.MS, "rerank: truncation depth for APIs seen in training (m_s)")
	fs.IntVar(&r.mUnseen, "m-unseen", rerank.DefaultParams.MU, "rerank: truncation depth for unseen APIs (m_u)")
	fs.Float64Var(&r.tauS, "tau-s", float64(rerank.DefaultParams.TauS), "rerank: Alg. 1 score threshold (tau_s)")
	fs.Float64Var(&r.tauM, "tau-m", float64(rerank.DefaultParams.TauM), "rerank: Alg. 2 retriever-cosine threshold (tau_m)")
	fs.IntVar(&r.perComponent, "per-component", rerank.DefaultParams.N, "rerank: Alg. 2 results kept per connected component (n)")
	fs.IntVar(&r.depth, "depth", 30, "rerank-m: how many of the retriever's top tools the cross-encoder reranks")
	fs.BoolVar(&r.grid, "grid", false, "rerank: grid-search (m_s, m_u) in -grid-m, tau_s, tau_m in {0.6..0.9}, n in {2,3,4} on the -retriever run's dev split, then evaluate with the best")
	fs.StringVar(&r.gridM, "grid-m", "10:30,10:50,30:50", "rerank: the (m_s:m_u) pairs the grid search tries")
	fs.StringVar(&r.gridMetric, "grid-metric", "ndcg@5", "rerank and fusion: dev metric the grid search (and the fusion weights) maximise (recall@K, ndcg@K or comp@K)")
	fs.BoolVar(&r.noHierarchy, "no-hierarchy", false, "rerank ablation: truncation + cross-encoder only")
	fs.StringVar(&r.only, "only", "", "rerank ablation: single or multi: use one algorithm for every query")
	fs.BoolVar(&r.oracleType, "oracle-type", false, "rerank ablation: query type from the qrels instead of the classifier")
	fs.StringVar(&r.interpolate, "interpolate", "minmax", "rerank: score = w·norm(cross-encoder) + (1-w)·norm(retriever), normalised per query over the reranked APIs: minmax, zscore, or off (the cross-encoder alone)")
	fs.Float64Var(&r.minT, "min-t", 2, "rerank: a dev-tuned weight above 0 is kept only when its per-query dev gain over the retriever's ranking has a paired t-statistic of at least this (else w = 0; 0: keep the dev optimum)")
	fs.StringVar(&r.weight, "weight", "dev", "rerank: the interpolation's cross-encoder weight w in [0, 1] (0: the retriever's ranking), or dev: the best of 0, 0.1, ..., 1 on the -retriever run's dev split (-grid-metric; with -grid or -ablations tuned with the other parameters). "+
		"fusion (-fusion minmax|zscore): W for W·first + (1-W)·second of two -runs, or one non-negative weight per -runs entry (W1,W2,...), or dev: the best weights in steps of 1/-fusion-steps summing to 1 on the dev split (-split dev's)")
	o.k = 100
	fs.Var(depthFlag{&o.k}, "k", "how many tools each query's ranking keeps: the depth -save-run writes and each -runs list fuses (metric cutoffs are -cutoffs)")
	fs.StringVar(&o.saveRun, "save-run", "", "write the rankings of the evaluated queries (the top -k) to this file in TREC run format (qid Q0 docid rank score tag; written atomically)")
	fs.StringVar(&o.runTag, "run-tag", "", "-save-run: the run's tag (default toolret-<method>)")
	fs.StringVar(&o.fu.runs, "runs", "", "fusion: the rankings to fuse, comma-separated: a method (bm25), run:RUN (a trained run, as -run RUN ranks), or a TREC run file (-save-run; a query of the split missing from it is an error); a file named like a method: ./bm25")
	fs.StringVar(&o.fu.method, "fusion", "", "fusion: zscore or minmax (interpolation of per-query normalised scores, -weight), or rrf (reciprocal rank fusion, -rrf-k); default: zscore with -weight dev, the weights picked on the dev split a run:RUN (or -retriever) recorded; with neither a run nor -weight W, rrf")
	fs.Float64Var(&o.fu.rrfK, "rrf-k", fusion.DefaultK, "fusion: the RRF constant k in 1/(k + rank)")
	fs.IntVar(&o.fu.steps, "fusion-steps", 10, "fusion -weight dev: try the weights in steps of 1/N (10: 0, 0.1, ..., 1)")
	fs.StringVar(&o.compare, "compare", "", "compare two rankings of the split query by query, A,B as -runs names them (a method, run:RUN, a TREC run file): each metric's means, B−A with its 95% paired-bootstrap interval and a paired randomization test's p-value")
	fs.IntVar(&o.compareSamples, "compare-samples", 10000, "-compare: bootstrap resamples and random sign flips")
	fs.Uint64Var(&o.seed, "seed", cli.DefaultSeed, "-compare: the seed of the resampling")
	o.fb.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	given := cli.Set(fs)
	o.holdoutGiven = given["holdout-tools"]
	var err error
	if o.holdout, err = cli.HoldoutOf(fs); err != nil {
		return nil, err
	}
	o.fu.weightGiven = given["weight"]
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (flags come first)", fs.Args())
	}
	o.data, o.run, r.retriever, o.backend = *dataDir, *runDir, *retriever, *be
	if err := o.setModel(*modelRef); err != nil {
		return nil, err
	}
	if o.ks, err = cli.ParseCutoffs(*cutoffs); err != nil {
		return nil, err
	}
	if err := cli.First(
		cli.Positive("m-seen", r.mSeen), cli.Positive("m-unseen", r.mUnseen),
		cli.Positive("per-component", r.perComponent), cli.Positive("depth", r.depth),
		cli.Positive("bm25-k1", o.bm25.K1), cli.NonNegative("bm25-b", o.bm25.B), cli.NonNegative("min-t", r.minT),
		cli.Positive("k", o.k), cli.NonNegative("rrf-k", o.fu.rrfK), cli.Positive("fusion-steps", o.fu.steps), cli.Positive("compare-samples", o.compareSamples),
	); err != nil {
		return nil, err
	}
	if o.bm25.B > 1 {
		return nil, fmt.Errorf("-bm25-b %v: must be in [0, 1]", o.bm25.B)
	}
	if o.fu.runs != "" && o.method != "fusion" {
		return nil, fmt.Errorf("-runs is for -method fusion")
	}
	if strings.ContainsAny(o.runTag, " \t\r\n") {
		return nil, fmt.Errorf("-run-tag %q: a TREC run tag has no white space", o.runTag)
	}
	if o.vectors != "text" && o.vectors != "usage" {
		return nil, fmt.Errorf("-tool-vectors %q: want text or usage", o.vectors)
	}
	if err := o.fb.check(&o); err != nil {
		return nil, err
	}
	return &o, nil
}

// method builds a ranker for a dataset from the options and describes it.
type method struct {
	help  string
	build func(o *options, d *data.Dataset) (retrieve.QueryRanker, string, error)
}

var methods = map[string]method{
	"bm25":     {"Okapi BM25 over tool texts", buildBM25},
	"rerank":   {"ToolRerank (needs -retriever, -reranker, -classifier)", buildRerank},
	"rerank-m": {"cross-encoder reranking of the retriever's top -depth (needs -retriever, -reranker)", buildRerank},
	"fusion":   {"fusion of rankings (needs -runs; -fusion rrf|minmax|zscore)", buildFusion},
}

func buildBM25(o *options, d *data.Dataset) (retrieve.QueryRanker, string, error) {
	docs := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		docs[i] = t.Text
	}
	return retrieve.Texts(bm25.New(docs, o.bm25)), "bm25", nil
}

func methodNames() string {
	var n []string
	for k := range methods {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

func main() {
	o, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err == nil {
		err = run(o, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(2)
	}
}

// run evaluates with the options and writes the result to w.
func run(o *options, w io.Writer) error {
	if o.compare != "" {
		return runCompare(o, w)
	}
	if o.fb.active() {
		return runFeedback(o, w)
	}
	m, ok := methods[o.method]
	if o.model != "" {
		if o.method == "fusion" {
			return fmt.Errorf("-model evaluates one model: -method fusion fuses -runs")
		}
		m, ok = method{"pre-trained model, zero-shot", buildModel}, true
		defer o.cleanup()
	} else if o.index != "" {
		if o.run != "" || o.method == "fusion" {
			return fmt.Errorf("-index evaluates an exported index: not with -run or -method fusion")
		}
		m, ok = method{"exported index", buildIndex}, true
	} else if o.noRefiner {
		return fmt.Errorf("-no-refiner applies to -index")
	} else if o.hybrid != "" || o.hybridWeight != -1 {
		return fmt.Errorf("-hybrid and -hybrid-weight apply to -index (-method fusion -runs run:RUN,bm25 fuses a trained run)")
	}
	if o.run != "" {
		if o.method == "fusion" {
			return fmt.Errorf("-method fusion fuses -runs: give the trained run as run:%s there, not -run", o.run)
		}
		m, ok = method{"trained run", buildRun}, true
	}
	if !ok {
		return fmt.Errorf("unknown -method %q (have %s)", o.method, methodNames())
	}
	if o.saveRun != "" && o.ablations {
		return fmt.Errorf("-save-run writes one method's rankings: not with -ablations")
	}
	start := time.Now()
	d, err := loadData(o)
	if err != nil {
		return err
	}
	loaded := time.Since(start)
	if o.ablations {
		return runAblations(o, w, d)
	}
	s, err := evalSplit(o, d)
	if err != nil {
		return err
	}
	r, desc, err := m.build(o, d)
	if err != nil {
		return err
	}
	var rec *recorder
	if o.saveRun != "" {
		rec = &recorder{QueryRanker: r, k: o.k}
		r = rec
	}
	start = time.Now()
	rep, err := metrics.EvaluateSplit(context.Background(), d, s, r, o.ks)
	if err != nil {
		return err
	}
	ranked := time.Since(start)
	if rec != nil {
		if err := rec.save(d, o.saveRun, runTag(o)); err != nil {
			return fmt.Errorf("-save-run: %w", err)
		}
	}
	if !o.subsets {
		rep.Subsets, rep.ToolRecall = nil, nil
	}
	if o.asJSON {
		return json.NewEncoder(w).Encode(rep)
	}
	fmt.Fprintf(w, "method %s; loaded in %v, ranked+evaluated %d queries in %v\n", desc, loaded.Round(time.Millisecond), rep.Overall.N, ranked.Round(time.Millisecond))
	fmt.Fprint(w, rep)
	return nil
}

// buildRun loads the trained run -run (a bi-encoder, or a kind runLoaders knows) as a ranker.
// With usage vectors a bi-encoder's tools are the mean of every train-split query using them:
// nothing is tuned here, so the run's dev queries may contribute; on -split dev only the
// run's recorded training part does.
func buildRun(o *options, d *data.Dataset) (retrieve.QueryRanker, string, error) {
	var train *data.Split
	if isDevSplit(o, d) {
		var err error
		if train, _, _, err = rundir.Splits(rundir.RunOf(o.run), d); err != nil {
			return nil, "", fmt.Errorf("-run: %w", err)
		}
	}
	return buildRunAt(o, d, o.run, train)
}

// buildRunAt loads the trained run at dir as a ranker; a bi-encoder's usage vectors come from
// the queries of train (nil: the dataset's train split).
func buildRunAt(o *options, d *data.Dataset, dir string, train *data.Split) (retrieve.QueryRanker, string, error) {
	be, err := backend.Open(backend.Name(o.backend))
	if err != nil {
		return nil, "", err
	}
	desc := "run " + dir
	if loader := runLoader(dir); loader != nil {
		r, err := loader(dir, be, d)
		return retrieve.Texts(r), desc, err
	}
	emb, err := biencoder.LoadRun(dir, be)
	if err != nil {
		return nil, "", err
	}
	var r *biencoder.Retriever
	if train == nil {
		r, err = emb.Retriever(d, o.vectors, "train")
	} else {
		r, err = emb.RetrieverFrom(d, o.vectors, train)
	}
	if err != nil {
		return nil, "", err
	}
	if n := r.UsageNote(); n != "" {
		fmt.Fprintln(os.Stderr, n)
	}
	if m := r.Marker(); m != "" { // iteration-aware: round 0's instructions
		return markedRanker{retrieve.Texts(r), m}, desc + " (" + o.vectors + " tool vectors, iteration marker " + fmt.Sprintf("%q", m) + ")", nil
	}
	return retrieve.Texts(r), desc + " (" + o.vectors + " tool vectors)", nil
}

// depthFlag is -k, the ranking depth: one number. A list such as "1,5" (what -k meant before
// it was the depth) is refused with a pointer to -cutoffs.
type depthFlag struct{ k *int }

func (f depthFlag) String() string {
	if f.k == nil {
		return "0"
	}
	return strconv.Itoa(*f.k)
}

func (f depthFlag) Set(v string) error {
	if strings.Contains(v, ",") {
		return fmt.Errorf("-k is the number of tools a ranking keeps; metric cutoffs such as %q are -cutoffs", v)
	}
	k, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("want a number of tools")
	}
	*f.k = k
	return nil
}
