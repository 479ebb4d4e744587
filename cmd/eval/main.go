// Command eval evaluates a tool-retrieval method on a dataset split and prints Recall@K,
// NDCG@K and COMP@K (percent), overall and per subset.
//
//	eval [-data DIR] [-split test] [-method bm25 | -run RUN [-tool-vectors text|usage]] [-k 1,3,5,10] [-json] [-subsets]
//	eval -method rerank -retriever RUN -reranker RUN -classifier RUN [-grid] [-m-seen 10 -m-unseen 30 -tau-s 0.8 -tau-m 0.8 -n 2]
//	eval -method rerank-m -retriever RUN -reranker RUN -m 30
//
// -run accepts bi-encoder runs and mlc classifier runs (the kind is read from the run's files).
//
// Without -data it uses the embedded default dataset.
package main

import (
	"context"
	"encoding/json"
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
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/retrieve/bm25"
)

// method builds a ranker for a dataset from the parsed flags.
type method struct {
	help  string
	build func(d *data.Dataset) (retrieve.Ranker, error)
}

var (
	dataDir = flag.String("data", "", "dataset directory (BEIR or Parquet layout); default: the embedded default dataset")
	split   = flag.String("split", "test", "split to evaluate")
	name    = flag.String("method", "bm25", "retrieval method: "+methodNames())
	ksFlag  = flag.String("k", "1,3,5,10", "comma-separated cut-offs")
	asJSON  = flag.Bool("json", false, "print one JSON object instead of a table")
	subsets = flag.Bool("subsets", false, "also print per-subset rows (number of relevant tools, seen/unseen)")
	k1      = flag.Float64("bm25-k1", bm25.DefaultParams.K1, "BM25 k1")
	b       = flag.Float64("bm25-b", bm25.DefaultParams.B, "BM25 b")
	stop    = flag.Bool("bm25-stopwords", false, "BM25: drop English stop words")
	runDir  = flag.String("run", "", "evaluate a trained run (bi-encoder) directory or checkpoint instead of -method")
	vectors = flag.String("tool-vectors", "text", "bi-encoder tool vectors: text (tool tower) or usage (Tool2Vec: mean of training queries)")
	beName  = flag.String("backend", "", "compute backend for trained models: go (default), onnx, xla:cpu, xla:cuda")
)

var methods = map[string]method{
	"bm25": {"Okapi BM25 over tool texts", func(d *data.Dataset) (retrieve.Ranker, error) {
		docs := make([]string, len(d.Tools))
		for i, t := range d.Tools {
			docs[i] = t.Text
		}
		return bm25.New(docs, bm25.Params{K1: *k1, B: *b, Stopwords: *stop}), nil
	}},
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
	flag.Parse()
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(1)
	}
}

func parseKs(s string) ([]int, error) {
	var ks []int
	for _, f := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k <= 0 {
			return nil, fmt.Errorf("-k %q: want positive integers separated by commas", s)
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// run evaluates with the parsed flags and writes the result to w.
func run(w io.Writer) error {
	ks, err := parseKs(*ksFlag)
	if err != nil {
		return err
	}
	m, ok := methods[*name]
	if *runDir != "" {
		m, ok = method{"trained run", buildRun}, true
		*name = "run " + *runDir
	}
	if !ok {
		return fmt.Errorf("unknown -method %q (have %s)", *name, methodNames())
	}
	start := time.Now()
	var d *data.Dataset
	if *dataDir == "" {
		d, err = data.Default()
	} else {
		d, err = data.Load(*dataDir)
	}
	if err != nil {
		return err
	}
	loaded := time.Since(start)
	if *ablations {
		return runAblations(w, d, ks)
	}
	r, err := m.build(d)
	if err != nil {
		return err
	}
	start = time.Now()
	rep, err := metrics.Run(context.Background(), d, *split, r, ks)
	if err != nil {
		return err
	}
	ranked := time.Since(start)
	if !*subsets {
		rep.Subsets, rep.ToolRecall = nil, nil
	}
	if *asJSON {
		return json.NewEncoder(w).Encode(rep)
	}
	fmt.Fprintf(w, "method %s; loaded in %v, ranked+evaluated %d queries in %v\n", *name, loaded.Round(time.Millisecond), rep.Overall.N, ranked.Round(time.Millisecond))
	fmt.Fprint(w, rep)
	return nil
}

// buildRun loads a trained bi-encoder run as a ranker.
func buildRun(d *data.Dataset) (retrieve.Ranker, error) {
	be, err := backend.Open(backend.Name(*beName))
	if err != nil {
		return nil, err
	}
	if loader := runLoader(*runDir); loader != nil {
		return loader(*runDir, be, d)
	}
	emb, err := biencoder.LoadRun(*runDir, be)
	if err != nil {
		return nil, err
	}
	return emb.Retriever(d, *vectors, "train")
}
