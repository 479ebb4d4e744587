package benchcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/toolret/toolret/benchmark"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
)

// loadBench loads a running server (toolret serve) over HTTP with the queries of -data:
// -first sends queries of those word counts one at a time, twice each (the first request's
// latency against the second's); then -requests retrieve requests from -concurrency
// clients (QPS, latency percentiles, errors); then, with -soak, the same load for that long,
// reading the server's RSS, heap and goroutines from its /metrics every -sample. It fails
// on any error.
//
//	bench load -url http://127.0.0.1:8080 [-data DIR] [-first 4,12,28,60,120,240] [-requests 20000]
//	           [-concurrency 32] [-k 5] [-soak 10m -sample 10s]
func loadBench(args []string) error {
	fs := flag.NewFlagSet("bench load", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8080", "the server's base URL")
	dataDir := fs.String("data", "../shared/datasets/toollens", "dataset whose queries are sent")
	first := fs.String("first", "", "comma-separated word counts: before the load, send one query of each length, twice, and print both latencies")
	n := fs.Int("requests", 20000, "retrieve requests of the load phase (0: none)")
	conc := fs.Int("concurrency", 32, "concurrent clients")
	k := fs.Int("k", 5, "tools per query")
	soak := fs.Duration("soak", 0, "after the load phase, keep loading for this long, sampling the server's memory and goroutines (0: no soak)")
	sample := fs.Duration("sample", 10*time.Second, "soak: interval between samples")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := cli.First(cli.NonNegative("requests", *n), cli.Positive("concurrency", *conc), cli.Positive("k", *k),
		cli.NonNegative("soak", soak.Seconds()), cli.Positive("sample", sample.Seconds())); err != nil {
		return err
	}
	var words []int
	for _, f := range strings.Split(*first, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		w, err := strconv.Atoi(f)
		if err != nil || w <= 0 {
			return fmt.Errorf("-first %q: want comma-separated positive word counts", *first)
		}
		words = append(words, w)
	}
	d, err := data.Load(*dataDir)
	if err != nil {
		return fmt.Errorf("-data: %w", err)
	}
	queries := make([]string, len(d.Queries))
	for i, q := range d.Queries {
		queries[i] = q.Text
	}
	if len(queries) == 0 {
		return fmt.Errorf("-data %s has no queries", *dataDir)
	}
	*url = strings.TrimRight(*url, "/")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc}, Timeout: time.Minute}
	fmt.Printf("load: %s, %d queries of %s, concurrency %d, k=%d\n", *url, len(queries), d.Name, *conc, *k)
	if len(words) > 0 {
		fmt.Println("first requests (one at a time):")
		if err := benchmark.FirstRequests(client, *url, queries, words, *k, os.Stdout); err != nil {
			return err
		}
	}
	if *n > 0 {
		before, err := benchmark.ReadProcessStats(client, *url)
		if err != nil {
			return err
		}
		res, err := benchmark.LoadPhase(client, *url, queries, *n, *conc, *k)
		if err != nil {
			return err
		}
		res.Print(os.Stdout, "load")
		after, err := benchmark.ReadProcessStats(client, *url)
		if err != nil {
			return err
		}
		fmt.Printf("  server: rss %.1f -> %.1f MB, goroutines %d -> %d\n", float64(before.RSS)/(1<<20), float64(after.RSS)/(1<<20), before.Goroutines, after.Goroutines)
		if res.Errors > 0 {
			return fmt.Errorf("%d errors of %d requests, first: %v", res.Errors, res.N, res.FirstErr)
		}
	}
	if *soak > 0 {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		fmt.Printf("soak: %v at concurrency %d, a sample every %v\n", *soak, *conc, *sample)
		at := *n % len(queries) // queries the load phase did not send last, so not cached
		queries = append(queries[at:len(queries):len(queries)], queries[:at]...)
		res, err := benchmark.Soak(ctx, client, *url, queries, *conc, *k, *soak, *sample, os.Stdout)
		if res != nil {
			res.Summary(os.Stdout)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		if res != nil && res.Errors > 0 {
			return fmt.Errorf("soak: %d errors of %d requests, first: %v", res.Errors, res.Requests, res.FirstErr)
		}
	}
	return nil
}
