// Package servecmd is the `toolret serve` command; it answers tool-retrieval requests from an exported index (cmd/export -format
// index) over HTTP, or over MCP for agents, with a live tool library.
//
//	serve -index DIR [-addr 127.0.0.1:8080] [-backend go] [-k 5] [-reranker DIR -depth 20]
//	      [-max-k 100] [-max-batch 64] [-max-body 1048576] [-timeout 10s] [-grace 30s]
//	      [-compact-every 1000] [-model NAME] [-mcp stdio|http] [-hybrid rrf|minmax|zscore [-hybrid-weight W]]
//
// HTTP (package serve): POST /v1/retrieve, POST /v1/embeddings (OpenAI's format), POST
// /v1/tools, GET and DELETE /v1/tools/{id}, GET /healthz, GET /metrics (Prometheus). Tool
// updates are appended to DIR/updates.log and fsynced before they are acknowledged, and
// compacted into the index every -compact-every updates and at shutdown. When TOOLRET_TOKEN
// is set, POST and DELETE /v1/tools need "Authorization: Bearer $TOOLRET_TOKEN".
//
// -mcp stdio serves the MCP tool find_tools on standard input and output (no HTTP), for an
// agent that starts the server itself; -mcp http adds the MCP streamable HTTP endpoint /mcp
// to the HTTP API.
//
// SIGINT or SIGTERM stops the server gracefully: no new connections, requests under way
// finish (up to -grace), pending updates are compacted. One JSON log line per request goes
// to standard error.
package servecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/retriever"
)

type options struct {
	index, addr, backend, reranker, model, mcp string
	k, depth, maxK, maxBatch, compactEvery     int
	maxBody                                    int64
	rerankWeight, hybridWeight                 float64
	hybrid                                     string
	noRefiner                                  bool
	batching                                   retriever.Batching
	queryCache                                 int
	timeout, grace                             time.Duration
}

// Main runs `toolret serve` with args (the words after it) and returns the exit code.
func Main(args []string) int {
	o, err := parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(o, log); err != nil {
		log.Error("serve failed", "error", err.Error())
		return 1
	}
	return 0
}

func parse(args []string) (*options, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	o := &options{}
	fs.StringVar(&o.index, "index", "", "exported index directory (cmd/export -format index; required); tool updates are written into it")
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "HTTP listen address")
	be := cli.Backend(fs)
	fs.IntVar(&o.k, "k", 5, "tools returned per query when a request gives no k")
	fs.StringVar(&o.reranker, "reranker", "", "exported cross-encoder (cmd/export -format hf) reranking the top -depth tools")
	fs.IntVar(&o.depth, "depth", 20, "tools the -reranker rescores per query")
	fs.Float64Var(&o.rerankWeight, "rerank-weight", -1, "with -reranker: w·minmax(cross-encoder) + (1-w)·minmax(retriever) over the top -depth, w in [0, 1] (the weight cmd/eval -method rerank -weight dev prints); -1: the cross-encoder's order alone")
	fs.StringVar(&o.hybrid, "hybrid", "", "fuse the index's first stage with BM25 over the tool texts: rrf (k 60), minmax or zscore (-hybrid-weight); each side ranks its top max(k, 100)")
	fs.Float64Var(&o.hybridWeight, "hybrid-weight", -1, "with -hybrid minmax|zscore: w·dense + (1-w)·bm25, w in [0, 1] (cmd/eval -method fusion -runs run:RUN,bm25 -weight dev prints it); -1: 0.5")
	fs.BoolVar(&o.noRefiner, "no-refiner", false, "serve the index's first stage alone, without the refiner packaged in it (cmd/export -refiner)")
	fs.IntVar(&o.maxK, "max-k", 100, "largest k a request may ask for")
	fs.IntVar(&o.maxBatch, "max-batch", 64, "most queries, embedding inputs or tools in one request")
	fs.Int64Var(&o.maxBody, "max-body", 1<<20, "request body limit in bytes")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "time limit of one request")
	fs.DurationVar(&o.grace, "grace", 30*time.Second, "at shutdown, how long requests under way may take to finish")
	fs.IntVar(&o.batching.MaxBatch, "embed-batch", retriever.DefaultBatching.MaxBatch, "dynamic batching: most query texts of concurrent requests embedded in one encoder call (0: each request alone)")
	fs.IntVar(&o.batching.MaxTokens, "embed-tokens", retriever.DefaultBatching.MaxTokens, "dynamic batching: most tokens in one encoder call")
	fs.DurationVar(&o.batching.MaxWait, "embed-wait", retriever.DefaultBatching.MaxWait, "dynamic batching: longest a query waits for others to share its encoder call")
	fs.IntVar(&o.queryCache, "query-cache", 10000, "query embeddings kept in an LRU cache keyed by the text (0: none)")
	fs.IntVar(&o.compactEvery, "compact-every", 1000, "tool updates logged before they are compacted into the index (0: only at shutdown)")
	fs.StringVar(&o.model, "model", "", "model name /v1/embeddings reports when a request names none (default: the index directory's name)")
	fs.StringVar(&o.mcp, "mcp", "", "serve MCP: stdio (find_tools on stdin/stdout, no HTTP) or http (adds /mcp to the HTTP API)")
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	o.backend = *be
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.index == "" {
		return nil, errors.New("-index is required")
	}
	switch o.mcp {
	case "", "stdio", "http":
	default:
		return nil, fmt.Errorf("-mcp %q: want stdio or http", o.mcp)
	}
	if err := cli.First(cli.Positive("k", o.k), cli.Positive("depth", o.depth), cli.Positive("max-k", o.maxK),
		cli.Positive("max-batch", o.maxBatch), cli.Positive("max-body", o.maxBody), cli.Positive("timeout", o.timeout.Seconds()),
		cli.NonNegative("grace", o.grace.Seconds()), cli.NonNegative("compact-every", o.compactEvery), cli.NonNegative("embed-batch", o.batching.MaxBatch),
		cli.Positive("embed-tokens", o.batching.MaxTokens), cli.NonNegative("embed-wait", o.batching.MaxWait.Seconds()), cli.NonNegative("query-cache", o.queryCache)); err != nil {
		return nil, err
	}
	if o.rerankWeight != -1 {
		if o.reranker == "" {
			return nil, errors.New("-rerank-weight needs -reranker")
		}
		if o.rerankWeight < 0 || o.rerankWeight > 1 {
			return nil, fmt.Errorf("-rerank-weight %g: want a weight in [0, 1], or -1 for none", o.rerankWeight)
		}
	}
	switch o.hybrid {
	case "":
		if o.hybridWeight != -1 {
			return nil, errors.New("-hybrid-weight needs -hybrid minmax or zscore")
		}
	case "rrf":
		if o.hybridWeight != -1 {
			return nil, errors.New("-hybrid-weight applies to -hybrid minmax or zscore; rrf has no weight")
		}
		o.hybridWeight = 0
	case "minmax", "zscore":
		if o.hybridWeight == -1 {
			o.hybridWeight = 0.5
		}
		if !(o.hybridWeight >= 0 && o.hybridWeight <= 1) {
			return nil, fmt.Errorf("-hybrid-weight %g: want a weight in [0, 1]", o.hybridWeight)
		}
	default:
		return nil, fmt.Errorf("-hybrid %q: want rrf, minmax or zscore", o.hybrid)
	}
	if o.hybrid != "" && o.reranker != "" {
		return nil, errors.New("-hybrid and -reranker: a reranker over hybrid candidates is not supported; give one")
	}
	if o.k > o.maxK {
		return nil, fmt.Errorf("-k %d is above -max-k %d", o.k, o.maxK)
	}
	if o.model == "" {
		abs, err := filepath.Abs(o.index)
		if err != nil {
			return nil, fmt.Errorf("-index %s: %w", o.index, err)
		}
		o.model = filepath.Base(abs)
	}
	return o, nil
}

func run(o *options, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }() // a second signal kills the process
	return toolret.Serve(ctx, toolret.ServeConfig{Index: o.index, Addr: o.addr, MCP: o.mcp, Backend: o.backend,
		K: o.k, MaxK: o.maxK, Reranker: o.reranker, Depth: o.depth, RerankWeight: o.rerankWeight,
		Hybrid: o.hybrid, HybridWeight: o.hybridWeight, NoRefiner: o.noRefiner, Batching: o.batching, QueryCache: o.queryCache, MaxBatch: o.maxBatch,
		MaxBody: o.maxBody, Timeout: o.timeout, Grace: o.grace, CompactEvery: o.compactEvery, Model: o.model,
		Token: os.Getenv("TOOLRET_TOKEN"), Log: log})
}
