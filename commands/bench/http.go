package benchcmd

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/toolret/toolret/benchmark"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
)

// pairs is a repeatable NAME=URL flag.
type pairs [][2]string

func (p *pairs) String() string { return fmt.Sprint(*p) }
func (p *pairs) Set(s string) error {
	name, url, ok := strings.Cut(s, "=")
	if !ok || name == "" || url == "" {
		return fmt.Errorf("%q: want NAME=URL", s)
	}
	*p = append(*p, [2]string{name, url})
	return nil
}

// httpBench load-tests HTTP servers already running (benchmark.CompareLoad), one load
// generator for all: the OpenAI-style embeddings endpoints of -embeddings (one text per
// request) with ToolLens queries (short texts; rows named NAME) and, with -long, tool texts
// (rows NAME-long), and the search endpoints of -search with the queries (rows NAME). Each
// endpoint gets -warmup requests, then -requests timed ones, at each -concurrency. It first
// embeds a few texts with every embeddings endpoint and prints the least cosine similarity
// between the first endpoint's embeddings and each other's (the same model should give ~1).
//
//	bench http -embeddings NAME=URL ... [-search NAME=URL ...] [-data DIR] [-concurrency 1,8,32]
//	           [-requests 1000] [-warmup 200] [-long] [-model ID] [-k 5]
func httpBench(args []string) error {
	fs := flag.NewFlagSet("bench http", flag.ContinueOnError)
	var emb, search pairs
	fs.Var(&emb, "embeddings", "NAME=URL of an OpenAI-style embeddings endpoint (repeat for each server)")
	fs.Var(&search, "search", "NAME=URL of a search endpoint taking {\"query\", \"k\"} (repeatable)")
	dataDir := fs.String("data", "../shared/datasets/toollens", "dataset whose queries (short texts) and tool texts (long) are sent")
	concs := fs.String("concurrency", "1,8,32", "comma-separated numbers of concurrent clients")
	n := fs.Int("requests", 1000, "timed requests per endpoint and concurrency")
	warm := fs.Int("warmup", 200, "requests before the timed ones, per endpoint and concurrency")
	long := fs.Bool("long", false, "also send the tool texts to the embeddings endpoints (rows NAME-long)")
	model := fs.String("model", "sentence-transformers/all-MiniLM-L6-v2", "\"model\" of the embeddings requests")
	k := fs.Int("k", 5, "k of the search requests")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if len(emb) == 0 && len(search) == 0 {
		return errors.New("give at least one -embeddings or -search NAME=URL")
	}
	if err := cli.First(cli.Positive("requests", *n), cli.NonNegative("warmup", *warm), cli.Positive("k", *k)); err != nil {
		return err
	}
	var conc []int
	maxConc := 1
	for _, s := range strings.Split(*concs, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c <= 0 {
			return fmt.Errorf("-concurrency %q: want positive integers separated by commas", *concs)
		}
		conc, maxConc = append(conc, c), max(maxConc, c)
	}
	d, err := data.Load(*dataDir)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	short := make([]string, len(d.Queries))
	for i, q := range d.Queries {
		short[i] = q.Text
	}
	rng.Shuffle(len(short), func(a, b int) { short[a], short[b] = short[b], short[a] })
	tools := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		tools[i] = t.Text
	}
	rng.Shuffle(len(tools), func(a, b int) { tools[a], tools[b] = tools[b], tools[a] })
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxConc, MaxConnsPerHost: maxConc}, Timeout: time.Minute}

	var shortEps, longEps, searchEps []benchmark.Endpoint
	for _, p := range emb {
		shortEps = append(shortEps, benchmark.EmbeddingsEndpoint(p[0], p[1], *model, 0))
		longEps = append(longEps, benchmark.EmbeddingsEndpoint(p[0]+"-long", p[1], *model, 0))
	}
	for _, p := range search {
		searchEps = append(searchEps, benchmark.SearchEndpoint(p[0], p[1], *k))
	}
	fmt.Printf("# bench http: %d timed requests (after %d warm-up ones) per endpoint and concurrency %s; texts of %s: %d queries (short), %d tool texts (long)\n",
		*n, *warm, *concs, d.Name, len(short), len(tools))
	if len(shortEps) > 1 {
		if err := agreement(client, shortEps, append(short[:8:8], tools[:8]...)); err != nil {
			return err
		}
	}
	groups, texts := [][]benchmark.Endpoint{shortEps}, [][]string{short}
	if *long {
		groups, texts = append(groups, longEps), append(texts, tools)
	}
	if len(searchEps) > 0 {
		groups, texts = append(groups, searchEps), append(texts, short)
	}
	rows, err := benchmark.CompareLoad(client, groups, texts, benchmark.CompareOptions{Concurrency: conc, Requests: *n, Warmup: *warm})
	if err != nil {
		return err
	}
	benchmark.PrintRows(os.Stdout, rows)
	return nil
}

// agreement embeds texts with every endpoint and prints the least cosine similarity of each
// endpoint's embeddings to the first one's.
func agreement(client *http.Client, eps []benchmark.Endpoint, texts []string) error {
	ref, err := benchmark.Embed(client, eps[0], texts)
	if err != nil {
		return fmt.Errorf("%s: %w", eps[0].System, err)
	}
	for _, ep := range eps[1:] {
		e, err := benchmark.Embed(client, ep, texts)
		if err != nil {
			return fmt.Errorf("%s: %w", ep.System, err)
		}
		least := 1.0
		for i := range e {
			least = min(least, benchmark.Cosine(ref[i], e[i]))
		}
		fmt.Printf("# %s vs %s: %d-dimensional embeddings, least cosine similarity over %d texts %.5f\n", ep.System, eps[0].System, len(e[0]), len(texts), least)
	}
	return nil
}
