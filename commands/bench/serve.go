package benchcmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/benchmark"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/internal/atomicfile"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/serve"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
)

// serveBench load-tests the HTTP server (package serve) on 127.0.0.1 with benchmark.LoadTest:
// -requests retrieve requests from -concurrency clients over an index of the tools of -data,
// first alone, then while a writer adds, replaces and deletes tools; it reports QPS and
// latency percentiles and checks that every answer is consistent with one library version.
// It fails on any error or inconsistency.
//
//	bench serve [-run RUN | -index DIR] [-data DIR] [-requests 20000] [-concurrency 32] [-k 5]
//	            [-write-interval 10ms] [-compact-every 100]
func serveBench(args []string) error {
	fs := flag.NewFlagSet("bench serve", flag.ContinueOnError)
	run := fs.String("run", "", "bi-encoder run whose index is served (default: a random model)")
	indexDir := fs.String("index", "", "serve a copy of this exported index instead of exporting one")
	dataDir := fs.String("data", "../shared/datasets/toollens", "dataset whose tools are indexed and whose queries are sent")
	n := fs.Int("requests", 20000, "retrieve requests per phase")
	conc := fs.Int("concurrency", 32, "concurrent clients")
	k := fs.Int("k", 5, "tools per query")
	interval := fs.Duration("write-interval", 10*time.Millisecond, "pause between the writer's updates")
	compactEvery := fs.Int("compact-every", 100, "server -compact-every")
	layers := fs.Int("layers", 2, "random model: layers")
	hidden := fs.Int("hidden", 192, "random model: hidden size")
	heads := fs.Int("heads", 4, "random model: attention heads")
	var batching toolindex.Batching = toolindex.DefaultBatching
	fs.IntVar(&batching.MaxBatch, "embed-batch", batching.MaxBatch, "server -embed-batch: dynamic batching of concurrent queries (0: off)")
	cache := fs.Int("query-cache", 0, "server -query-cache (0: none, so that every request runs the encoder)")
	beName := cli.Backend(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := cli.First(cli.Positive("requests", *n), cli.Positive("concurrency", *conc), cli.Positive("k", *k),
		cli.NonNegative("write-interval", interval.Seconds()), cli.NonNegative("compact-every", *compactEvery),
		cli.Positive("layers", *layers), cli.Positive("hidden", *hidden), cli.Positive("heads", *heads)); err != nil {
		return err
	}
	if *run != "" && *indexDir != "" {
		return errors.New("give -run or -index, not both")
	}
	be, err := backend.Open(backend.Name(*beName))
	if err != nil {
		return err
	}
	d, err := data.Load(*dataDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v; using the embedded dataset\n", err)
		if d, err = data.Default(); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "toolret-bench-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "index")
	what := ""
	switch {
	case *indexDir != "":
		if err := atomicfile.CopyTree(*indexDir, dir); err != nil {
			return err
		}
		what = "index " + *indexDir
	default:
		var m *export.Model
		if *run != "" {
			if m, err = export.LoadModel(*run, be); err != nil {
				return err
			}
			what = "run " + *run
		} else {
			if m, err = exporttest.BiEncoder(exporttest.Options{Hidden: *hidden, Layers: *layers, Heads: *heads}, be, 1); err != nil {
				return err
			}
			what = fmt.Sprintf("random bi-encoder (%d layers, hidden %d)", *layers, *hidden)
		}
		if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: dir, Data: d, DataSource: *dataDir}); err != nil {
			return err
		}
	}
	st, err := store.Open(dir, *compactEvery, toolindex.WithBackend(be), toolindex.WithBatching(batching), toolindex.WithQueryCache(*cache))
	if err != nil {
		return err
	}
	defer st.Close()
	tokb := make([]byte, 16)
	rand.Read(tokb)
	token := hex.EncodeToString(tokb)
	h := serve.New(st, serve.Config{DefaultK: *k, Token: token, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}).Handler()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	url := "http://" + ln.Addr().String()
	queries := make([]string, len(d.Queries))
	for i, q := range d.Queries {
		queries[i] = q.Text
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc}, Timeout: time.Minute}
	fmt.Printf("serve: %s, %d tools of %s, server on %s, backend %s; %d retrieve requests per phase, concurrency %d, k=%d, embed-batch %d, query-cache %d\n",
		what, st.R.Len(), d.Name, ln.Addr(), backend.Name(*beName), *n, *conc, *k, batching.MaxBatch, *cache)
	return benchmark.LoadTest(benchmark.Server{Client: client, URL: url, Token: token, Library: st.R.Library, Compactions: st.Compactions},
		queries, benchmark.LoadOptions{Requests: *n, Concurrency: *conc, K: *k, WriteInterval: *interval}, os.Stdout)
}
