// Command eval evaluates a tool-retrieval method on a dataset split and prints Recall@K,
// NDCG@K and COMP@K (percent), overall and per subset.
//
//	eval [-data DIR] [-split test] [-method bm25 | -run RUN [-tool-vectors text|usage]] [-cutoffs 1,3,5,10] [-json] [-subsets]
//	eval -method rerank -retriever RUN -reranker RUN -classifier RUN [-grid] [-m-seen 10 -m-unseen 30 -tau-s 0.8 -tau-m 0.8 -per-component 2]
//	     [-interpolate minmax|zscore|off] [-weight dev|W]
//	eval -method rerank-m -retriever RUN -reranker RUN -depth 30 [-interpolate minmax|zscore|off] [-weight dev|W]
//
// -run accepts bi-encoder runs and mlc classifier runs (the kind is read from the run's files).
// The rerank methods tune and evaluate with the dev split the -retriever run recorded
// (run.json): the grid search never sees a query any stage trained on.
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
	"strings"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/retrieve/bm25"
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
	fs.StringVar(&o.split, "split", "test", "split to evaluate")
	fs.StringVar(&o.method, "method", "bm25", "retrieval method: "+methodNames())
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
	fs.StringVar(&r.gridMetric, "grid-metric", "ndcg@5", "rerank: dev metric the grid search maximises (recall@K, ndcg@K or comp@K)")
	fs.BoolVar(&r.noHierarchy, "no-hierarchy", false, "rerank ablation: truncation + cross-encoder only")
	fs.StringVar(&r.only, "only", "", "rerank ablation: single or multi: use one algorithm for every query")
	fs.BoolVar(&r.oracleType, "oracle-type", false, "rerank ablation: query type from the qrels instead of the classifier")
	fs.StringVar(&r.interpolate, "interpolate", "minmax", "rerank: score = w·norm(cross-encoder) + (1-w)·norm(retriever), normalised per query over the reranked APIs: minmax, zscore, or off (the cross-encoder alone)")
	fs.Float64Var(&r.minT, "min-t", 2, "rerank: a dev-tuned weight above 0 is kept only when its per-query dev gain over the retriever's ranking has a paired t-statistic of at least this (else w = 0; 0: keep the dev optimum)")
	fs.StringVar(&r.weight, "weight", "dev", "rerank: the interpolation's cross-encoder weight w in [0, 1] (0: the retriever's ranking), or dev: the best of 0, 0.1, ..., 1 on the -retriever run's dev split (-grid-metric; with -grid or -ablations tuned with the other parameters)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (flags come first)", fs.Args())
	}
	o.data, o.run, r.retriever, o.backend = *dataDir, *runDir, *retriever, *be
	var err error
	if o.ks, err = cli.ParseCutoffs(*cutoffs); err != nil {
		return nil, err
	}
	if err := cli.First(
		cli.Positive("m-seen", r.mSeen), cli.Positive("m-unseen", r.mUnseen),
		cli.Positive("per-component", r.perComponent), cli.Positive("depth", r.depth),
		cli.Positive("bm25-k1", o.bm25.K1), cli.NonNegative("bm25-b", o.bm25.B), cli.NonNegative("min-t", r.minT),
	); err != nil {
		return nil, err
	}
	if o.bm25.B > 1 {
		return nil, fmt.Errorf("-bm25-b %v: must be in [0, 1]", o.bm25.B)
	}
	if o.vectors != "text" && o.vectors != "usage" {
		return nil, fmt.Errorf("-tool-vectors %q: want text or usage", o.vectors)
	}
	return &o, nil
}

// method builds a ranker for a dataset from the options and describes it.
type method struct {
	help  string
	build func(o *options, d *data.Dataset) (retrieve.QueryRanker, string, error)
}

var methods = map[string]method{
	"bm25": {"Okapi BM25 over tool texts", func(o *options, d *data.Dataset) (retrieve.QueryRanker, string, error) {
		docs := make([]string, len(d.Tools))
		for i, t := range d.Tools {
			docs[i] = t.Text
		}
		return retrieve.Texts(bm25.New(docs, o.bm25)), "bm25", nil
	}},
	"rerank":   {"ToolRerank (needs -retriever, -reranker, -classifier)", buildRerank},
	"rerank-m": {"cross-encoder reranking of the retriever's top -depth (needs -retriever, -reranker)", buildRerank},
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
	m, ok := methods[o.method]
	if o.run != "" {
		m, ok = method{"trained run", buildRun}, true
	}
	if !ok {
		return fmt.Errorf("unknown -method %q (have %s)", o.method, methodNames())
	}
	start := time.Now()
	var d *data.Dataset
	var err error
	if o.data == "" {
		d, err = data.Default()
	} else {
		d, err = data.Load(o.data)
	}
	if err != nil {
		return err
	}
	loaded := time.Since(start)
	if o.ablations {
		return runAblations(o, w, d)
	}
	s, err := d.Split(o.split)
	if err != nil {
		return fmt.Errorf("-split: %w", err)
	}
	r, desc, err := m.build(o, d)
	if err != nil {
		return err
	}
	start = time.Now()
	rep, err := metrics.EvaluateSplit(context.Background(), d, s, r, o.ks)
	if err != nil {
		return err
	}
	ranked := time.Since(start)
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

// buildRun loads a trained run (a bi-encoder, or a kind runLoaders knows) as a ranker. With
// usage vectors a bi-encoder's tools are the mean of every train-split query using them:
// nothing is tuned here, so the run's dev queries may contribute.
func buildRun(o *options, d *data.Dataset) (retrieve.QueryRanker, string, error) {
	be, err := backend.Open(backend.Name(o.backend))
	if err != nil {
		return nil, "", err
	}
	desc := "run " + o.run
	if loader := runLoader(o.run); loader != nil {
		r, err := loader(o.run, be, d)
		return retrieve.Texts(r), desc, err
	}
	emb, err := biencoder.LoadRun(o.run, be)
	if err != nil {
		return nil, "", err
	}
	r, err := emb.Retriever(d, o.vectors, "train")
	if err != nil {
		return nil, "", err
	}
	if n := r.UsageNote(); n != "" {
		fmt.Fprintln(os.Stderr, n)
	}
	return retrieve.Texts(r), desc + " (" + o.vectors + " tool vectors)", nil
}
