package benchcmd

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/toolret/toolret/benchmark"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/toolindex"
)

// annBench measures exact search and the HNSW index (toolindex.BuildANN) on synthetic
// libraries: build time, memory, query latency (search only: the query vectors are given,
// nothing is embedded), recall@k against exact search, and tool updates under a querying
// client. It prints a Markdown table (docs/large-libraries.md holds one).
//
//	bench ann [-sizes 100000,1000000] [-dim 384] [-queries 200] [-k 10] [-versions 20 -batch 100]
//	          [-m 16 -ef 64 -efc 100] [-seed 1]
func annBench(args []string) error {
	fs := flag.NewFlagSet("bench ann", flag.ContinueOnError)
	d := toolindex.DefaultANNConfig()
	sizes := fs.String("sizes", "100000,1000000", "library sizes (tools), comma-separated")
	dim := fs.Int("dim", 384, "embedding dimension (384: all-MiniLM-L6-v2)")
	queries := fs.Int("queries", 200, "query vectors timed (and the recall's queries)")
	k := fs.Int("k", 10, "tools per query")
	versions := fs.Int("versions", 20, "library versions set under a querying client")
	batch := fs.Int("batch", 100, "tools each version adds (and as many it deletes)")
	m := fs.Int("m", d.M, "HNSW: neighbours per node")
	ef := fs.Int("ef", d.EfSearch, "HNSW: query beam")
	efc := fs.Int("efc", d.EfConstruction, "HNSW: insertion beam")
	seed := fs.Uint64("seed", 1, "seed of the library, queries and updates")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var ns []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-sizes %q: %q is not a positive number of tools", *sizes, s)
		}
		ns = append(ns, n)
	}
	if err := cli.First(cli.Positive("dim", *dim), cli.Positive("queries", *queries), cli.Positive("k", *k),
		cli.NonNegative("versions", *versions), cli.Positive("batch", *batch), cli.Positive("m", *m),
		cli.Positive("ef", *ef), cli.Positive("efc", *efc)); err != nil {
		return err
	}
	o := benchmark.ANNOptions{Sizes: ns, Dim: *dim, Queries: *queries, K: *k, Versions: *versions, Batch: *batch, Seed: *seed,
		HNSW: toolindex.ANNConfig{M: *m, EfSearch: *ef, EfConstruction: *efc}}
	fmt.Printf("ann: synthetic libraries (dimension %d), %d queries, k=%d, HNSW M=%d efSearch=%d efConstruction=%d, %d versions of +%d/-%d tools; %d CPUs\n",
		*dim, *queries, *k, *m, *ef, *efc, *versions, *batch, *batch, runtime.NumCPU())
	for i, n := range ns { // each size's rows as soon as they are measured
		start := time.Now()
		o.Sizes = []int{n}
		rows, err := benchmark.ANN(o, os.Stderr)
		if err != nil {
			return err
		}
		benchmark.WriteANNTable(os.Stdout, rows, *k, i == 0)
		fmt.Fprintf(os.Stderr, "ann: %d tools measured in %v\n", n, time.Since(start).Round(time.Second))
	}
	return nil
}
