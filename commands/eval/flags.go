package evalcmd

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/rank/bm25"
	"github.com/toolret/toolret/rerank"
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
	// index: an exported index evaluated as toolindex.Load serves it (index.go).
	index string
	// model: a pre-trained model directory (-model, resolved) evaluated zero-shot through an
	// index built in a temporary directory (toolret.EvalConfig.Model), with prompts.
	model   string
	prompts export.Prompts
	// evals: the evaluations set up beside the one evaluated (-runs' model: entries), closed
	// by cleanup.
	evals []*toolret.Evaluation
	// lengths: -query-len, -tool-len of the dense models (-model, -run, -runs' entries).
	lengths   export.Lengths
	noRefiner bool
	// hybrid, hybridWeight: -hybrid, -hybrid-weight (-1: not given) of -index.
	hybrid       string
	hybridWeight float64
	// noRecipe: -no-recipe, -model's or -index's dense ranking without its recipe's fusion.
	noRecipe bool
	// ens: -ensemble, -ensemble-fusion, -ensemble-weights of -index.
	ens *cli.Ensemble
	// compare: -compare A,B (compare.go), with compareSamples resamples seeded by seed.
	compare        string
	compareSamples int
	seed           uint64
	// quantize: -quantize of -model and -index.
	quantize export.Quantization
	// suite: -suite and its flags (suite.go).
	suite suiteOptions
	// clauses: -clauses and its flags.
	clauses cli.ClauseFlags
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
	scorer evaluate.PairScorer
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
	retriever := cli.FirstStage(fs)
	be := cli.Backend(fs)
	quant := cli.Quantize(fs, "-model and -index: the encoder's weights (-index default: the index's own)")
	cutoffs := cli.Cutoffs(fs)
	fs.StringVar(&o.split, "split", "test", "split to evaluate; dev: the dev split a trained run recorded (-run, else -first-stage, else the first run:RUN of -runs), when the dataset has no split named dev")
	fs.StringVar(&o.method, "method", "bm25", "retrieval method: "+methodNames())
	fs.StringVar(&o.index, "index", "", "evaluate an exported index (cmd/export -format index) as toolindex.Load serves it, with its packaged refiner, instead of -method")
	modelRef := fs.String("model", "", "evaluate a model: a pre-trained HuggingFace or sentence-transformers directory or hub id org/name[@revision] zero-shot (its index over the dataset's tools, as export -model builds it), or a run (as -run)")
	fs.Func("query-prompt", "-model: prefix put before every query (default: the model's \"query\" prompt)", func(s string) error { o.prompts.Query = &s; return nil })
	fs.Func("tool-prompt", "-model: prefix put before every tool text (default: the model's \"document\" prompt)", func(s string) error { o.prompts.Tool = &s; return nil })
	fs.IntVar(&o.lengths.Query, "query-len", 0, "max tokens per query of the dense models evaluated (-model, -run, and -runs' model: and run: entries; 0: each model's own: a bi-encoder run's training length, a pre-trained model's max_seq_length)")
	fs.IntVar(&o.lengths.Tool, "tool-len", 0, "max tokens per tool text of the dense models evaluated, as -query-len (e.g. tools embedded whole by a run trained on 64-token tools)")
	fs.BoolVar(&o.noRefiner, "no-refiner", false, "-index: its first stage alone, without its packaged refiner")
	fs.StringVar(&o.hybrid, "hybrid", "", "-index: its first stage fused with BM25 as serve -hybrid serves it: rrf, minmax or zscore")
	fs.Float64Var(&o.hybridWeight, "hybrid-weight", -1, "-index -hybrid minmax|zscore: the dense weight w in [0, 1] (-1: 0.5)")
	fs.BoolVar(&o.noRecipe, "no-recipe", false, "-model, -index, -suite: the dense ranking alone, without the BM25 fusion of the model's recipe (toolret_recipe.json; an index records it from its model)")
	o.ens = cli.EnsembleFlags(fs) // -index: fused with more indexes as serve -ensemble serves them
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object instead of a table")
	fs.BoolVar(&o.subsets, "subsets", false, "also print per-subset rows (number of relevant tools, seen/unseen tools, queries within / over the encoder's token budget, each library of a multi-source -data)")
	fs.Float64Var(&o.bm25.K1, "bm25-k1", bm25.DefaultParams.K1, "BM25 k1")
	fs.Float64Var(&o.bm25.B, "bm25-b", bm25.DefaultParams.B, "BM25 b")
	fs.BoolVar(&o.bm25.Stopwords, "bm25-stopwords", false, "BM25: drop English stop words")
	fs.StringVar(&o.vectors, "tool-vectors", "text", "bi-encoder tool vectors: text (tool tower) or usage (Tool2Vec: mean embedding of the training queries using the tool; -run: every query of the train split, rerank: the -first-stage run's training part, without its dev queries)")
	fs.BoolVar(&o.ablations, "ablations", false, "rerank: one table, with cross-encoder scores computed once: the bi-encoder alone, Rerank-10/30/50, ToolRerank and its ablations (no hierarchy, Alg. 1 only, Alg. 2 only, oracle query type), each ToolRerank row grid-searched on dev")
	fs.StringVar(&r.reranker, "reranker", "", "rerank: cross-encoder run (train crossencoder -first-stage RUN: the same dev split); -model and -index: a cross-encoder (an exported one, export -format hf, or a run) reranking the top -depth tools of the model's ranking after its recipe's fusion and clauses, in place of its recipe's reranker, interpolated at -weight (dev: picked on the dataset's dev split, else -first-stage's recorded one, and printed as \"rerank weight W (...)\")")
	fs.StringVar(&r.classifier, "classifier", "", "rerank: query-type classifier run (train classifier -kind querytype -first-stage RUN: the same dev split)")
	fs.IntVar(&r.mSeen, "m-seen", rerank.DefaultParams.MS, "rerank: truncation depth for APIs seen in training (m_s)")
	fs.IntVar(&r.mUnseen, "m-unseen", rerank.DefaultParams.MU, "rerank: truncation depth for unseen APIs (m_u)")
	fs.Float64Var(&r.tauS, "tau-s", float64(rerank.DefaultParams.TauS), "rerank: Alg. 1 score threshold (tau_s)")
	fs.Float64Var(&r.tauM, "tau-m", float64(rerank.DefaultParams.TauM), "rerank: Alg. 2 retriever-cosine threshold (tau_m)")
	fs.IntVar(&r.perComponent, "per-component", rerank.DefaultParams.N, "rerank: Alg. 2 results kept per connected component (n)")
	fs.IntVar(&r.depth, "depth", evaluate.DefaultRerankDepth, "rerank-m, and -reranker with -model or -index: how many of the retriever's top tools the cross-encoder reranks")
	fs.BoolVar(&r.grid, "grid", false, "rerank: grid-search (m_s, m_u) in -grid-m, tau_s, tau_m in {0.6..0.9}, n in {2,3,4} on the -first-stage run's dev split, then evaluate with the best")
	fs.StringVar(&r.gridM, "grid-m", "10:30,10:50,30:50", "rerank: the (m_s:m_u) pairs the grid search tries")
	fs.StringVar(&r.gridMetric, "grid-metric", evaluate.DefaultRerankMetric, "rerank and fusion: dev metric the grid search (and the fusion weights) maximise (recall@K, ndcg@K or comp@K)")
	fs.BoolVar(&r.noHierarchy, "no-hierarchy", false, "rerank ablation: truncation + cross-encoder only")
	fs.StringVar(&r.only, "only", "", "rerank ablation: single or multi: use one algorithm for every query")
	fs.BoolVar(&r.oracleType, "oracle-type", false, "rerank ablation: query type from the qrels instead of the classifier")
	fs.StringVar(&r.interpolate, "interpolate", "minmax", "rerank: score = w·norm(cross-encoder) + (1-w)·norm(retriever), normalised per query over the reranked APIs: minmax, zscore, or off (the cross-encoder alone); -reranker with -model or -index: minmax or off")
	fs.Float64Var(&r.minT, "min-t", evaluate.DefaultMinT, "rerank: a dev-tuned weight above 0 is kept only when its per-query dev gain over the retriever's ranking has a paired t-statistic of at least this (else w = 0; 0: keep the dev optimum)")
	fs.StringVar(&r.weight, "weight", "dev", "rerank: the interpolation's cross-encoder weight w in [0, 1] (0: the retriever's ranking), or dev: the best of 0, 0.1, ..., 1 on the -first-stage run's dev split (-grid-metric; with -grid or -ablations tuned with the other parameters); -reranker with -model or -index: the same, dev being the dataset's dev split, else -first-stage's. "+
		"fusion (-fusion minmax|zscore): W for W·first + (1-W)·second of two -runs, or one non-negative weight per -runs entry (W1,W2,...), or dev: the best weights in steps of 1/-fusion-steps summing to 1 on the dev split (-split dev's), or adaptive: a per-query dense weight for two -runs (dense, then bm25), clamp(BASE + SLOPE·z1, 0, 1) with z1 the top z-score of the dense ranking, BASE and SLOPE learned on that dev split averaging over its libraries (each library once), or adaptive:BASE,SLOPE to fuse at a given rule (export -hybrid-weight adaptive:BASE,SLOPE records one)")
	o.k = toolret.DefaultFusionDepth
	fs.Var(depthFlag{&o.k}, "k", "how many tools each query's ranking keeps: the depth -save-run writes and each -runs list fuses (metric cutoffs are -cutoffs)")
	fs.StringVar(&o.saveRun, "save-run", "", "write the rankings of the evaluated queries (the top -k) to this file in TREC run format (qid Q0 docid rank score tag), or as ranx's JSON run when it ends in .json (ids may hold white space, as toolmix's do); written atomically")
	fs.StringVar(&o.runTag, "run-tag", "", "-save-run: the run's tag (default toolret-<method>)")
	fs.StringVar(&o.fu.runs, "runs", "", "fusion: the rankings to fuse, comma-separated: a method (bm25), run:RUN (a trained run, as -run RUN ranks), model:REF (a pre-trained model zero-shot, as -model REF ranks: a directory or hub id), or a run file (-save-run: TREC, or JSON when named *.json; a query of the split missing from it is an error); a file named like a method: ./bm25")
	fs.StringVar(&o.fu.method, "fusion", "", "fusion: zscore or minmax (interpolation of per-query normalised scores, -weight), or rrf (reciprocal rank fusion, -rrf-k); default: zscore with -weight dev, the weights picked on the dev split a run:RUN (or -first-stage) recorded; with neither a run nor -weight W, rrf")
	fs.Float64Var(&o.fu.rrfK, "rrf-k", fusion.DefaultK, "fusion: the RRF constant k in 1/(k + rank)")
	fs.IntVar(&o.fu.steps, "fusion-steps", toolret.DefaultFusionSteps, "fusion -weight dev: try the weights in steps of 1/N (10: 0, 0.1, ..., 1)")
	fs.BoolVar(&o.fu.newTools, "new-tool-weights", false, "fusion -weight dev: also pick on dev a second set of weights, and an offset, for the new tools (those no query of the dev run's training part needs: held-out tools, tools added after training), as ToolRerank treats unseen tools apart")
	fs.StringVar(&o.compare, "compare", "", "compare two rankings of the split query by query, A,B as -runs names them (a method, run:RUN, a run file of -save-run): each metric's means, B−A with its 95% paired-bootstrap interval and a paired randomization test's p-value")
	fs.IntVar(&o.compareSamples, "compare-samples", toolret.DefaultCompareSamples, "-compare: bootstrap resamples and random sign flips")
	fs.Uint64Var(&o.seed, "seed", cli.DefaultSeed, "-compare: the seed of the resampling")
	o.fb.register(fs)
	o.suite.register(fs)
	o.clauses.Register(fs, "split each query into clauses (sentences, \";\", \"and then\", \", then\", \"and\" before an action verb, ...), rank the whole query and every clause, and merge the rankings so that each need's tools reach the top (rerank.Clauses); a query of one clause ranks as before")
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	given := cli.Set(fs)
	if err := o.suite.check(given); err != nil {
		return nil, err
	}
	if err := o.clauses.Check(given); err != nil {
		return nil, err
	}
	o.suite.modelRef = *modelRef
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
	if (o.lengths.Query != 0 || o.lengths.Tool != 0) && o.index != "" {
		return nil, fmt.Errorf("-query-len and -tool-len apply to -model, -run and -runs' model: and run: entries, not to -index (export the index with them)")
	}
	if o.quantize, err = export.ParseQuantization(*quant); err != nil {
		return nil, fmt.Errorf("-%w", err)
	}
	if o.quantize != export.QuantDefault && o.model == "" && o.index == "" {
		return nil, fmt.Errorf("-quantize applies to -model and -index (export a run with -format hf, then evaluate it with -model)")
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
	if o.fu.newTools && o.method != "fusion" {
		return nil, fmt.Errorf("-new-tool-weights is for -method fusion")
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
