// Package servecmd is the `toolret serve` command; it answers tool-retrieval requests from an exported index (cmd/export -format
// index) over HTTP, or over MCP for agents, with a live tool library.
//
//	serve -index DIR [-addr 127.0.0.1:8080] [-backend go] [-k 5] [-reranker DIR -depth 20]
//	      [-max-k 100] [-max-batch 64] [-max-body 1048576] [-timeout 10s] [-grace 30s]
//	      [-compact-every 1000] [-model NAME] [-mcp stdio|http] [-hybrid rrf|minmax|zscore [-hybrid-weight W] | -no-recipe]
//	      [-ensemble DIR,... [-ensemble-fusion rrf|minmax|zscore] [-ensemble-weights W,...]]
//	      [-ann auto|on|off] [-database URL] [-warmup 1] [-drain-delay 0s] [-max-inflight 512] [-max-conns 4096] [-header-timeout 5s]
//	      [-quantize int8|int8-tensor|none (with -backend onnx)]
//	serve -library LIB.jsonl (-model REF | -index DIR) [-upstreams CONFIG.json] [-state DIR]
//	      [-keys FILE] [-rate N -burst N] [...as above]
//
// -library makes the server a tool gateway over a tool library (toolret import): MCP tools
// search_tools, call_tool and report_result, and POST /v1/search, GET /v1/tools[/{name}],
// POST /v1/call, POST /v1/feedback, GET /openapi.json (package gateway). Its index is built
// at start from the pre-trained -model (or reused from -state), or is the exported -index;
// calls go to the upstreams of -upstreams (an mcpServers configuration plus OpenAPI
// upstreams). -keys (default $TOOLRET_KEYS) names the API keys file: "NAME KEY SCOPES"
// lines, scopes search, call, admin. The library is live: LIB.jsonl rewritten (toolret import
// -out LIB.jsonl again), an upstream's notifications/tools/list_changed and POST and DELETE
// /v1/tools (tool definitions; only tools the gateway can serve) change it without a restart,
// through the index's update log and, with -database, on every replica. See docs/gateway.md.
//
// A model directory that carries its recipe (toolret_recipe.json, export -hybrid) is served
// as it says without flags: with -library -model DIR its BM25 fusion is applied, and an
// -index exported from it records the fusion and applies it. -hybrid replaces it, -no-recipe
// serves the dense first stage.
//
// HTTP (package serve): POST /v1/retrieve, POST /v1/embeddings (OpenAI's format), POST
// /v1/tools, GET and DELETE /v1/tools/{id}, GET /healthz, GET /livez, GET /readyz, GET /metrics (Prometheus). Tool
// updates are appended to DIR/updates.log and fsynced before they are acknowledged, and
// compacted into the index every -compact-every updates and at shutdown. When TOOLRET_TOKEN
// is set, POST and DELETE /v1/tools need "Authorization: Bearer $TOOLRET_TOKEN".
// -database URL (default $TOOLRET_DATABASE_URL) shares the library, its updates and the
// usage log through PostgreSQL among several servers instead (docs/replicas.md); the shared
// update log keeps the newest -database-log-keep versions.
//
// -mcp stdio serves the MCP tool find_tools on standard input and output (no HTTP), for an
// agent that starts the server itself; -mcp http adds the MCP streamable HTTP endpoint /mcp
// to the HTTP API.
//
// The server listens from the start: /livez answers 200 while the process runs, /readyz 200
// once the index is loaded and the model warmed up (-warmup) and the store takes updates;
// until then other requests get 503 with Retry-After. SIGINT or SIGTERM drains it: /readyz
// 503 at once, -drain-delay more of answering, then no new connections while requests under
// way finish (up to -grace); pending updates are compacted, the log flushed, exit 0. Bodies
// past -max-body get 413, requests past -max-inflight and connections past -max-conns 503.
// One JSON log line per request goes to standard error.
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
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/serve"
	"github.com/toolret/toolret/toolindex"
)

type options struct {
	index, addr, backend, reranker, model, mcp      string
	library, upstreams, state, keys, database       string
	rate                                            float64
	burst                                           int
	k, depth, maxK, maxBatch, compactEvery, logKeep int
	maxBody                                         int64
	rerankWeight, hybridWeight                      float64
	hybrid, ann                                     string
	indexBackend                                    string
	ensemble                                        []string
	ensembleFusion                                  string
	ensembleWeights                                 []float64
	quantize                                        export.Quantization
	noRefiner, noRecipe                             bool
	batching                                        toolindex.Batching
	queryCache                                      int
	timeout, grace                                  time.Duration
	maxInFlight, maxConns, warmup                   int
	headerTimeout, drainDelay                       time.Duration
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
	err = run(o, log)
	if err != nil {
		log.Error("serve failed", "error", err.Error())
	}
	os.Stderr.Sync() // the log, when standard error is a file (a pipe has nothing to flush)
	if err != nil {
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
	quant := cli.Quantize(fs, "the encoder's weights (default: the index's own, int8 for an index exported with -quantize int8)")
	fs.IntVar(&o.k, "k", 5, "tools returned per query when a request gives no k")
	fs.StringVar(&o.reranker, "reranker", "", "exported cross-encoder (cmd/export -format hf) reranking the top -depth tools")
	fs.IntVar(&o.depth, "depth", 20, "tools the -reranker rescores per query")
	fs.Float64Var(&o.rerankWeight, "rerank-weight", -1, "with -reranker: w·minmax(cross-encoder) + (1-w)·minmax(retriever) over the top -depth, w in [0, 1] (the weight cmd/eval -method rerank -weight dev prints); -1: the cross-encoder's order alone")
	fs.StringVar(&o.hybrid, "hybrid", "", "fuse the index's first stage with BM25 over the tool texts: rrf (k 60), minmax or zscore (-hybrid-weight); each side ranks its top max(k, 100)")
	fs.Float64Var(&o.hybridWeight, "hybrid-weight", -1, "with -hybrid minmax|zscore: w·dense + (1-w)·bm25, w in [0, 1] (cmd/eval -method fusion -runs run:RUN,bm25 -weight dev prints it); -1: 0.5")
	ens := cli.EnsembleFlags(fs)
	fs.StringVar(&o.ann, "ann", "auto", "approximate (HNSW) search: auto (from 50000 tools; docs/large-libraries.md), on, off (exact: every tool scored)")
	fs.BoolVar(&o.noRecipe, "no-recipe", false, "without -hybrid: serve the dense first stage, not the BM25 fusion of the model's recipe (toolret_recipe.json of -library's -model, or the fusion an -index records from it)")
	fs.BoolVar(&o.noRefiner, "no-refiner", false, "serve the index's first stage alone, without the refiner packaged in it (cmd/export -refiner)")
	fs.IntVar(&o.maxK, "max-k", 100, "largest k a request may ask for")
	fs.IntVar(&o.maxBatch, "max-batch", 64, "most queries, embedding inputs or tools in one request")
	fs.Int64Var(&o.maxBody, "max-body", 1<<20, "request body limit in bytes")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "time limit of one request")
	fs.DurationVar(&o.grace, "grace", 30*time.Second, "at shutdown, how long requests under way may take to finish")
	fs.DurationVar(&o.drainDelay, "drain-delay", 0, "at shutdown, how long to keep answering with /readyz at 503 before refusing new connections (time for a load balancer to take the server out)")
	fs.IntVar(&o.maxInFlight, "max-inflight", 512, "most requests answered at once; past it a request gets 503 with Retry-After at once (0: no limit)")
	fs.IntVar(&o.maxConns, "max-conns", 4096, "most open connections; past it a new connection gets 503 and is closed (0: no limit)")
	fs.DurationVar(&o.headerTimeout, "header-timeout", 5*time.Second, "time a client has to send a request's headers")
	fs.IntVar(&o.warmup, "warmup", toolret.DefaultWarmup, "before reporting ready, run the model on every padded length in batches of 1, 2, 4, ... up to this many queries (0: no warm-up)")
	fs.IntVar(&o.batching.MaxBatch, "embed-batch", toolindex.DefaultBatching.MaxBatch, "dynamic batching: most query texts of concurrent requests embedded in one encoder call (0: each request alone)")
	fs.IntVar(&o.batching.MaxTokens, "embed-tokens", toolindex.DefaultBatching.MaxTokens, "dynamic batching: most tokens in one encoder call")
	fs.DurationVar(&o.batching.MaxWait, "embed-wait", toolindex.DefaultBatching.MaxWait, "dynamic batching: longest a query waits for others to share its encoder call")
	fs.IntVar(&o.queryCache, "query-cache", 10000, "query embeddings kept in an LRU cache keyed by the text (0: none)")
	fs.StringVar(&o.database, "database", os.Getenv(toolret.EnvDatabase), "PostgreSQL `URL` (postgres://USER:PASSWORD@HOST/DB) through which several servers share the tool library, its updates and the usage log (docs/replicas.md); default $TOOLRET_DATABASE_URL; none: the index directory's files")
	fs.IntVar(&o.logKeep, "database-log-keep", 10000, "with -database: the newest versions the shared update log keeps; a replica further behind reloads the library (0: every version)")
	fs.IntVar(&o.compactEvery, "compact-every", 1000, "tool updates logged before they are compacted into the index (0: only at shutdown)")
	fs.StringVar(&o.model, "model", "", "with -library: the pre-trained model (run, checkpoint, HuggingFace directory or hub id) its zero-shot index is built with; with -index: the model name /v1/embeddings reports when a request names none (default: the index directory's name)")
	fs.StringVar(&o.library, "library", "", "tool library `LIB.jsonl` (toolret import) to serve as a tool gateway: search_tools, call_tool, /v1/search, /v1/call")
	fs.StringVar(&o.upstreams, "upstreams", "", "with -library: the gateway's upstream configuration `CONFIG.json` (the mcpServers configuration, plus \"openapi\" upstreams)")
	fs.StringVar(&o.state, "state", "", "with -library: state directory of the built index and the usage log (default: LIB without .jsonl, plus .toolret)")
	fs.StringVar(&o.keys, "keys", os.Getenv("TOOLRET_KEYS"), "API keys `FILE` (lines NAME KEY SCOPES, scopes search, call, admin); every endpoint but /healthz, /metrics and /openapi.json then needs one (default $TOOLRET_KEYS)")
	fs.Float64Var(&o.rate, "rate", 0, "requests a second each caller (API key, else address) may make (0: no limit)")
	fs.IntVar(&o.burst, "burst", 0, "with -rate: requests a caller may make at once (default: -rate)")
	fs.StringVar(&o.indexBackend, "index-backend", "", "with -library -model: the backend that builds the zero-shot index (default -backend; auto: onnx when this binary has it and libonnxruntime.so.1 is installed, else -backend)")
	fs.StringVar(&o.mcp, "mcp", "", "serve MCP: stdio (find_tools on stdin/stdout, no HTTP) or http (adds /mcp to the HTTP API)")
	err := cli.Parse(fs, args)
	if err != nil {
		return nil, err
	}
	o.backend = *be
	if o.quantize, err = export.ParseQuantization(*quant); err != nil {
		return nil, fmt.Errorf("-%w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case o.index == "" && o.library == "":
		return nil, errors.New("-index is required (or -library LIB.jsonl with -model REF)")
	case o.library == "" && (o.upstreams != "" || o.state != ""):
		return nil, errors.New("-upstreams and -state apply to -library")
	case o.library != "" && o.index == "" && o.model == "":
		return nil, errors.New("-library needs -model (the pre-trained model to index it with) or an exported -index")
	}
	if err := cli.First(cli.NonNegative("rate", o.rate), cli.NonNegative("burst", o.burst)); err != nil {
		return nil, err
	}
	switch o.mcp {
	case "", "stdio", "http":
	default:
		return nil, fmt.Errorf("-mcp %q: want stdio or http", o.mcp)
	}
	if err := cli.First(cli.Positive("k", o.k), cli.Positive("depth", o.depth), cli.Positive("max-k", o.maxK),
		cli.Positive("max-batch", o.maxBatch), cli.Positive("max-body", o.maxBody), cli.Positive("timeout", o.timeout.Seconds()),
		cli.NonNegative("grace", o.grace.Seconds()), cli.NonNegative("compact-every", o.compactEvery), cli.NonNegative("database-log-keep", o.logKeep), cli.NonNegative("embed-batch", o.batching.MaxBatch),
		cli.NonNegative("drain-delay", o.drainDelay.Seconds()), cli.NonNegative("max-inflight", o.maxInFlight), cli.NonNegative("max-conns", o.maxConns),
		cli.Positive("header-timeout", o.headerTimeout.Seconds()), cli.NonNegative("warmup", o.warmup),
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
	if o.ensemble, o.ensembleFusion, o.ensembleWeights, err = ens.Values(); err != nil {
		return nil, err
	}
	if len(o.ensemble) > 0 && (o.index == "" || o.library != "") {
		return nil, errors.New("-ensemble fuses -index with more exported indexes: give -index, without -library")
	}
	if o.ann != "auto" && o.ann != "on" && o.ann != "off" {
		return nil, fmt.Errorf("-ann %q: want auto, on or off", o.ann)
	}
	if o.hybrid != "" && o.reranker != "" {
		return nil, errors.New("-hybrid and -reranker: a reranker over hybrid candidates is not supported; give one")
	}
	if o.k > o.maxK {
		return nil, fmt.Errorf("-k %d is above -max-k %d", o.k, o.maxK)
	}
	if o.model == "" && o.index != "" {
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
	var keys *serve.Keys
	if o.keys != "" {
		var err error
		if keys, err = serve.ReadKeys(o.keys); err != nil {
			return fmt.Errorf("-keys: %w", err)
		}
	}
	model, pretrained := o.model, ""
	if o.library != "" && o.index == "" {
		model, pretrained = "", o.model
	}
	return toolret.Serve(ctx, toolret.ServeConfig{Index: o.index, Library: o.library, Pretrained: pretrained, State: o.state,
		Upstreams: o.upstreams, Keys: keys, Rate: o.rate, Burst: o.burst, Addr: o.addr, MCP: o.mcp, Backend: o.backend, IndexBackend: o.indexBackend,
		Quantize: o.quantize, K: o.k, MaxK: o.maxK, Reranker: o.reranker, Depth: o.depth, RerankWeight: o.rerankWeight,
		Hybrid: o.hybrid, HybridWeight: o.hybridWeight, Ensemble: o.ensemble, EnsembleFusion: o.ensembleFusion, EnsembleWeights: o.ensembleWeights, NoRefiner: o.noRefiner, NoRecipe: o.noRecipe, ANN: o.ann, Batching: o.batching, QueryCache: o.queryCache, MaxBatch: o.maxBatch,
		MaxBody: o.maxBody, Timeout: o.timeout, Grace: o.grace, CompactEvery: o.compactEvery, Database: o.database, DatabaseLogKeep: o.logKeep, Model: model,
		MaxInFlight: o.maxInFlight, MaxConns: o.maxConns, HeaderTimeout: o.headerTimeout, Warmup: o.warmup, DrainDelay: o.drainDelay,
		Token: os.Getenv("TOOLRET_TOKEN"), Log: log})
}
