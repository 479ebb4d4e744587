package toolret

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/gateway"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/rerank"
	"github.com/toolret/toolret/serve"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
	"github.com/toolret/toolret/toolindex/store/pgstore"
)

// ServeConfig configures Serve. Zero fields take the defaults DefaultServeConfig gives.
// `toolret serve` declares one flag per field from its tags (package internal/flagcfg: the
// field's name in kebab case or its flag tag, its help tag, its value in DefaultServeConfig as
// the default); the fields tagged flag:"-" are the command's own flags or none.
type ServeConfig struct {
	// Index is the exported index directory (Export with export.FormatIndex); tool updates
	// are written into it. With Library and no Index, the index is built from Pretrained.
	Index string `help:"exported index directory (cmd/export -format index; required); tool updates are written into it"`
	// Library is a tool library file (package library): the server becomes a tool gateway
	// (package gateway: search_tools and call_tool, POST /v1/search, /v1/call, ...) over it.
	// Without Index, a zero-shot index of it is built at start by the model Pretrained (a
	// run, a checkpoint, a HuggingFace directory or a hub id) into State, or the one built
	// there before is reused; either way the index is synced to the library (only new and
	// changed tools are embedded). The file is watched: rewritten (toolret import -out again),
	// its changes are served without a restart (gateway.Gateway.WatchLibrary).
	Library    string "help:\"tool library `LIB.jsonl` (toolret import) to serve as a tool gateway: search_tools, call_tool, /v1/search, /v1/call; the file is watched and its changes served live\""
	Pretrained string `flag:"-"`
	// State is the gateway's state directory: its index and usage log (default
	// gateway.StateDir(Library)).
	State string `help:"with -library: state directory of the built index and the usage log (default: LIB without .jsonl, plus .toolret)"`
	// Upstreams is the gateway's upstream configuration file (gateway.ReadUpstreams): the
	// mcpServers configuration plus OpenAPI upstreams; "" for none (calls then fail, saying so).
	Upstreams string "help:\"with -library: the gateway's upstream configuration `CONFIG.json` (the mcpServers configuration, plus \\\"openapi\\\" upstreams)\""
	// Keys are the API keys the server requires, with their scopes (serve.Config.Keys);
	// Rate and Burst limit each caller (serve.Config.Rate).
	Keys  *serve.Keys `flag:"-"`
	Rate  float64     `help:"requests a second each caller (API key, else address) may make (0: no limit)"`
	Burst int         `help:"with -rate: requests a caller may make at once (default: -rate)"`
	// Addr is the HTTP listen address.
	Addr string `help:"HTTP listen address"`
	// MCP is "" (HTTP only), "stdio" (MCP on standard input and output, no HTTP) or "http"
	// (the MCP streamable HTTP endpoint /mcp beside the HTTP API).
	MCP string `help:"serve MCP: stdio (find_tools on stdin/stdout, no HTTP) or http (adds /mcp to the HTTP API)"`
	// Backend names the compute backend (backend.Open).
	Backend string `help:"compute backend: go (default), onnx, xla:cpu, xla:cuda"`
	// IndexBackend names the backend that builds the zero-shot index of -library (the bulk
	// encoding of every tool; the server then loads it on Backend): "" is Backend; "auto" is
	// ONNX Runtime when the binary has it and the library is installed (backend.Auto), else
	// Backend; any other name is opened as it is. "auto" is the default: on a quiet 2-core
	// machine ONNX Runtime built a 2,117-tool index in 42.5 s against the go backend's 67.7 s
	// (docs/results/2026-11-29-gateway-live.md).
	IndexBackend string `help:"with -library -model: the backend that builds the zero-shot index (auto: onnx when this binary has it and libonnxruntime.so.1 is installed, else -backend; empty: -backend)"`
	// Quantize runs the index's encoders with int8 weights (export.QuantInt8, on Backend
	// onnx) or fp32 (export.QuantNone); "": the index's own (toolindex.WithQuantization). With
	// Library and Pretrained, the zero-shot index is built with it, and with Precision
	// (gateway.BuildIndexAt).
	Quantize export.Quantization `help:"the encoder's weights (default: the index's own, int8 for an index exported with -quantize int8): int8 (int8 weights per output channel, activations quantized per batch; needs -backend onnx), int8-tensor (one scale per matrix) or none (fp32)"`
	// Precision embeds queries (and tools added while serving) at backend.FP32, backend.BF16
	// (the encoders' matrix multiplications in bfloat16; go and xla backends, not with int8
	// weights) or backend.AutoPrecision (bf16 where the backend multiplies bfloat16 natively);
	// "": the index's own (export.Manifest.Precision, recorded by export -precision;
	// toolindex.WithPrecision).
	Precision string `help:"the encoders' precision (default: the index's own, bf16 for an index exported with -precision bf16, else fp32): fp32, bf16 (matrix multiplications in bfloat16; go and xla backends, not onnx nor int8) or auto (bf16 where the backend multiplies bfloat16 natively: xla:cuda, xla:cpu on an AMX CPU)"`
	// K is the number of tools a request gets when it gives none; MaxK the most it may ask.
	K    int `help:"tools returned per query when a request gives no k"`
	MaxK int `help:"largest k a request may ask for"`
	// Reranker is an exported cross-encoder reranking the top Depth tools of the first stage
	// (the dense or hybrid ranking, merged over clauses); RerankWeight in [0, 1] interpolates
	// it with the first stage (-1: the cross-encoder's order alone). "": the reranker of the
	// model's recipe (Pretrained's toolret_recipe.json, with its depth and weight, or the one
	// Index records from it), if any, unless NoRecipe.
	Reranker     string  `help:"exported cross-encoder (cmd/export -format hf) reranking the top -depth tools of the first stage (after -hybrid and -clauses), in place of the reranker of the model's recipe"`
	Depth        int     `help:"tools the -reranker rescores per query"`
	RerankWeight float64 `help:"with -reranker: w·minmax(cross-encoder) + (1-w)·minmax(retriever) over the top -depth, w in [0, 1] (the weight cmd/eval -method rerank -weight dev prints); -1: the cross-encoder's order alone"`
	// Hybrid fuses the index's first stage with BM25: "", "rrf", "minmax" or "zscore", the
	// dense side weighted HybridWeight (minmax and zscore). "" serves the fusion the model's
	// recipe gives (export.Recipe: Pretrained's toolret_recipe.json, or the fusion Index
	// records from it), if any, unless NoRecipe.
	Hybrid       string  `help:"fuse the index's first stage with BM25 over the tool texts: rrf (k 60), minmax or zscore (-hybrid-weight); each side ranks its top max(k, 100)"`
	HybridWeight float64 `help:"with -hybrid minmax|zscore: w·dense + (1-w)·bm25, w in [0, 1] (cmd/eval -method fusion -runs run:RUN,bm25 -weight dev prints it)"`
	// HybridAdaptive, with Hybrid minmax or zscore, replaces HybridWeight by a dense weight
	// per query (fusion.Adaptive, toolindex.WithHybridAdaptive); it is set from the model's
	// recipe (hybrid.adaptive) when the recipe's fusion is served. No flag: -hybrid serves a
	// fixed weight.
	HybridAdaptive *fusion.Adaptive `flag:"-" json:"-"`
	// NoRecipe ignores the model's recipe: the dense first stage, without the recipe's BM25
	// fusion, clauses and reranker (those Hybrid, Clauses and Reranker give are served).
	NoRecipe bool `help:"ignore the model's recipe (toolret_recipe.json of -library's -model, or what an -index records from it): no BM25 fusion, clauses or reranker but those -hybrid, -clauses and -reranker give"`
	// Clauses ranks each query whole and clause by clause and merges the rankings
	// (toolindex.WithClauses). nil: the clauses of the model's recipe (or those Index
	// records), if any, unless NoRecipe.
	Clauses *rerank.ClauseOptions `help:"rank each query whole and clause by clause and merge the rankings (eval -clauses): on (rerank's defaults), max, mix or rrf, then optional ,norm=zscore|minmax|off ,whole=W ,min-words=N ,depth=N; in place of the clauses of the model's recipe"`
	// Ensemble names more exported indexes over the index's tools, fused with it per query
	// by EnsembleFusion ("rrf", "minmax" or "zscore") with EnsembleWeights (one per index,
	// the index's first; none for rrf): toolindex.WithEnsemble. Not with Library.
	Ensemble        []string  `flag:"-"`
	EnsembleFusion  string    `flag:"-"`
	EnsembleWeights []float64 `flag:"-"`
	// NoRefiner serves the index's first stage without its packaged refiner.
	NoRefiner bool `help:"serve the index's first stage alone, without the refiner packaged in it (cmd/export -refiner)"`
	// ANN is the first stage's search: "auto" or "" (HNSW from toolindex.DefaultANNThreshold
	// tools), "on" or "off" (exact); toolindex.WithANN.
	ANN string `help:"approximate (HNSW) search: auto (from 50000 tools; docs/large-libraries.md), on, off (exact: every tool scored)"`
	// Batching embeds the queries of concurrent requests together (toolindex.Batching; zero
	// MaxBatch: each request alone); QueryCache keeps the embeddings of that many recent
	// query texts (0: none).
	Batching   toolindex.Batching
	QueryCache int `help:"query embeddings kept in an LRU cache keyed by the text (0: none)"`
	// MaxBatch, MaxBody, Timeout and Grace bound requests and the shutdown.
	MaxBatch int           `help:"most queries, embedding inputs or tools in one request"`
	MaxBody  int64         `help:"request body limit in bytes"`
	Timeout  time.Duration `help:"time limit of one request"`
	Grace    time.Duration `help:"at shutdown, how long requests under way may take to finish"`
	// MaxInFlight is the most requests answered at once (serve.Config.MaxInFlight), MaxConns
	// the most open connections (serve.LimitConns), HeaderTimeout the time a client has to
	// send a request's headers (serve.Limits; 0: 5s); 0 MaxInFlight or MaxConns: no limit.
	MaxInFlight   int           `flag:"max-inflight" help:"most requests answered at once; past it a request gets 503 with Retry-After at once (0: no limit)"`
	MaxConns      int           `help:"most open connections; past it a new connection gets 503 and is closed (0: no limit)"`
	HeaderTimeout time.Duration `help:"time a client has to send a request's headers"`
	// Warmup, when > 0, runs the models on every input shape, in batches of up to Warmup
	// queries, before the server reports ready (toolindex.Warmup); 0: no warm-up.
	Warmup int `help:"before reporting ready, run the model on every padded length in batches of 1, 2, 4, ... up to this many queries (0: no warm-up)"`
	// DrainDelay is how long the server keeps answering, with /readyz at 503, after ctx ends
	// and before it stops taking connections (time for load balancers to see it go).
	DrainDelay time.Duration `help:"at shutdown, how long to keep answering with /readyz at 503 before refusing new connections (time for a load balancer to take the server out)"`
	// CompactEvery is the number of logged tool updates compacted into the index at once (0:
	// only at shutdown).
	CompactEvery int `help:"tool updates logged before they are compacted into the index (0: only at shutdown)"`
	// Database, when set, is the URL of a PostgreSQL database (postgres://USER:PASSWORD@HOST/DB)
	// through which several servers (replicas) share the tool library, its update log and the
	// gateway's usage log (pgstore.Open, store.OpenShared; docs/replicas.md): an update one
	// replica acknowledges is committed there first and applied by the others. "" keeps the
	// library in the index directory's files (updates.log), for one server.
	Database string "env:\"TOOLRET_DATABASE_URL\" help:\"PostgreSQL `URL` (postgres://USER:PASSWORD@HOST/DB) through which several servers share the tool library, its updates and the usage log (docs/replicas.md); default $TOOLRET_DATABASE_URL; none: the index directory's files\""
	// DatabaseLogKeep is how many of the newest versions the shared update log keeps
	// (pgstore.Options.LogKeep): a replica further behind reloads the library instead of
	// replaying the log. 0 keeps every version.
	DatabaseLogKeep int `help:"with -database: the newest versions the shared update log keeps; a replica further behind reloads the library (0: every version)"`
	// Model is the model name reported by /v1/embeddings (default: the index directory's name).
	Model string `help:"with -library: the pre-trained model (run, checkpoint, HuggingFace directory or hub id) its zero-shot index is built with; with -index: the model name /v1/embeddings reports when a request names none (default: the index directory's name)"`
	// Token, when set, is the bearer token that tool updates need (the command reads
	// TOOLRET_TOKEN).
	Token string `flag:"-"`
	// Log receives one JSON line per event; nil: standard error.
	Log *slog.Logger `flag:"-"`
}

// DefaultServeConfig returns the configuration `toolret serve` starts from.
func DefaultServeConfig() ServeConfig {
	return ServeConfig{Addr: "127.0.0.1:8080", IndexBackend: "auto", K: 5, MaxK: 100, Depth: 20, RerankWeight: -1, HybridWeight: 0.5, ANN: "auto",
		Batching: toolindex.DefaultBatching, QueryCache: 10000,
		MaxBatch: 64, MaxBody: 1 << 20, Timeout: 10 * time.Second, Grace: 30 * time.Second, CompactEvery: 1000, DatabaseLogKeep: 10000,
		MaxInFlight: 512, MaxConns: 4096, HeaderTimeout: 5 * time.Second, Warmup: DefaultWarmup}
}

// DefaultWarmup is serve's -warmup: one query of each padded length is run before the
// server is ready (every compiled shape holds memory on the go backend: ~120 MB for
// all-MiniLM-L6-v2, so batches are warmed only when asked).
const DefaultWarmup = 1

// Serve serves cfg.Index until ctx ends, then shuts down gracefully: no new connections,
// requests under way finish (up to cfg.Grace), pending tool updates are compacted. Over
// HTTP it listens from the start: GET /livez answers at once, GET /readyz once the index is
// loaded and the model warmed up (cfg.Warmup), and at 503 again from the moment ctx ends.
func Serve(ctx context.Context, cfg ServeConfig) error {
	if cfg.Index == "" && cfg.Library == "" {
		return errors.New("serve: no index given (-index, or -library and -model)")
	}
	if len(cfg.Ensemble) > 0 && cfg.Library != "" {
		return errors.New("serve: an ensemble (-ensemble) serves exported indexes as they are; a tool library (-library) changes the tools: give one")
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	started := time.Now()
	var front *httpFront
	if cfg.MCP != "stdio" {
		var err error
		if front, err = listenEarly(cfg, log); err != nil {
			return err
		}
		defer front.abort()
	}
	be, err := backend.Open(backend.Name(cfg.Backend))
	if err != nil {
		return fmt.Errorf("-backend: %w", err)
	}
	if err := export.CheckQuantization(be, cfg.Quantize); err != nil {
		return fmt.Errorf("-quantize: %w", err)
	}
	if cfg.Precision != "" {
		if _, _, _, err := backend.ResolvePrecision("-precision", cfg.Precision, backend.NameOf(be)); err != nil {
			return err
		}
	}
	if err := applyRecipe(ctx, &cfg); err != nil {
		return err
	}
	var lib *library.Library
	if cfg.Library != "" {
		if lib, err = library.Read(cfg.Library); err != nil {
			return err
		}
		if cfg.State == "" {
			cfg.State = gateway.StateDir(cfg.Library)
		}
		if err := os.MkdirAll(cfg.State, 0o755); err != nil {
			return fmt.Errorf("-state: %w", err)
		}
		if cfg.Index == "" {
			if cfg.Pretrained == "" {
				return errors.New("serve: -library needs -model (the pre-trained model to index it with) or -index")
			}
			start := time.Now()
			front.stage("building the zero-shot index of " + cfg.Library)
			bbe, err := indexBackend(cfg, be, log)
			if err != nil {
				return err
			}
			dir, built, err := gateway.BuildIndexAt(ctx, lib, cfg.Library, cfg.Pretrained, cfg.State, bbe, cfg.Quantize, cfg.Precision)
			if err != nil {
				return err
			}
			log.Info("zero-shot index", "library", cfg.Library, "tools", len(lib.Tools), "model", cfg.Pretrained, "index", dir, "built", built,
				"backend", bbe.Name(), "ms", time.Since(start).Milliseconds())
			cfg.Index = dir
			if cfg.Model == "" {
				cfg.Model = filepath.Base(strings.TrimRight(cfg.Pretrained, "/"))
			}
		}
	}
	if cfg.Model == "" {
		abs, err := filepath.Abs(cfg.Index)
		if err != nil {
			return fmt.Errorf("-index %s: %w", cfg.Index, err)
		}
		cfg.Model = filepath.Base(abs)
	}
	ropts := []toolindex.Option{toolindex.WithBackend(be), toolindex.WithBatching(cfg.Batching), toolindex.WithQueryCache(cfg.QueryCache),
		toolindex.WithQuantization(cfg.Quantize), toolindex.WithPrecision(cfg.Precision)}
	if cfg.Reranker != "" {
		ropts = append(ropts, toolindex.WithReranker(cfg.Reranker, cfg.Depth))
		if cfg.RerankWeight != -1 {
			ropts = append(ropts, toolindex.WithInterpolation(float32(cfg.RerankWeight)))
		}
	}
	if cfg.NoRefiner {
		ropts = append(ropts, toolindex.WithoutRefiner())
	}
	if cfg.Clauses != nil {
		ropts = append(ropts, toolindex.WithClauses(cfg.Clauses))
	}
	if cfg.Hybrid != "" && cfg.HybridAdaptive != nil {
		ropts = append(ropts, toolindex.WithHybridAdaptive(cfg.Hybrid, *cfg.HybridAdaptive))
	} else if cfg.Hybrid != "" {
		ropts = append(ropts, toolindex.WithHybrid(cfg.Hybrid, cfg.HybridWeight))
	}
	if cfg.NoRecipe {
		ropts = append(ropts, toolindex.WithoutRecipe())
	}
	if len(cfg.Ensemble) > 0 || cfg.EnsembleFusion != "" {
		ropts = append(ropts, toolindex.WithEnsemble(cfg.EnsembleFusion, cfg.Ensemble, cfg.EnsembleWeights))
	}
	ropts = append(ropts, toolindex.WithANN(toolindex.ANNConfig{Mode: cfg.ANN}))
	start := time.Now()
	st, pg, err := openStore(ctx, cfg, log, ropts)
	if err != nil {
		return err
	}
	ilib := st.R.Library()
	hybrid, hybridW := st.R.Hybrid()
	reranker, rerankDepth, rerankW := st.R.Reranker()
	prec := st.R.Precision()
	if prec == "" {
		prec = backend.FP32
	}
	log.Info("index loaded", "index", cfg.Index, "tools", ilib.Len(), "version", ilib.Version, "replayed_updates", st.Pending(),
		"dim", st.R.Dim(), "precision", prec, "tool_updates", st.R.CanEmbedTools() == nil, "hybrid", hybrid, "hybrid_weight", hybridW, "hybrid_adaptive", st.R.HybridAdaptive() != nil,
		"reranker", reranker, "rerank_depth", rerankDepth, "rerank_weight", rerankW, "ensemble", len(cfg.Ensemble), "ms", time.Since(start).Milliseconds())
	scfg := serve.Config{DefaultK: cfg.K, MaxK: cfg.MaxK, MaxBatch: cfg.MaxBatch, MaxBody: cfg.MaxBody, Timeout: cfg.Timeout,
		Token: cfg.Token, Model: cfg.Model, MCP: cfg.MCP == "http", Keys: cfg.Keys, Rate: cfg.Rate, Burst: cfg.Burst, Logger: log,
		MaxInFlight: cfg.MaxInFlight}
	var gw *gateway.Gateway
	callTimeout := time.Duration(0)
	if lib != nil {
		if gw, err = startGateway(ctx, cfg, lib, st, pg, log); err != nil {
			st.Close()
			return err
		}
		scfg.Extension = gw
		callTimeout = gw.CallTimeout()
	}
	closeAll := func() error {
		if gw != nil {
			if err := gw.Close(); err != nil {
				log.Error("closing the gateway", "error", err.Error())
			}
		}
		return st.Close()
	}
	front.stage("warming up the model")
	info, err := warmUp(ctx, cfg, st, log)
	if err != nil {
		closeAll()
		if ctx.Err() != nil {
			return nil // stopped before it was ready
		}
		return err
	}
	info["startup_ms"], info["gateway"] = time.Since(started).Milliseconds(), gw != nil
	if cfg.MCP == "stdio" {
		err := serve.NewMCP(st, scfg).Run(ctx, &mcp.StdioTransport{})
		if cerr := closeAll(); err == nil || errors.Is(err, context.Canceled) {
			err = cerr
		}
		return err
	}
	if cfg.Token == "" && cfg.Keys == nil {
		log.Warn("TOOLRET_TOKEN is not set: anyone who reaches the server can add and delete tools")
	}
	if gw != nil && cfg.Keys == nil {
		log.Warn("no API keys (-keys, TOOLRET_KEYS): anyone who reaches the server can call the library's tools")
	}
	return front.serve(ctx, cfg, serve.New(st, scfg).Handler(), 2*cfg.Timeout+callTimeout+5*time.Second, st, info, closeAll)
}

// applyRecipe sets cfg's Hybrid, Clauses and Reranker (with Depth and RerankWeight) from the
// recipe of cfg.Pretrained (export.ReadRecipe) when cfg serves a library with it, each unless
// cfg gives it or NoRecipe (also over a zero-shot index built before the recipe was). A
// recipe that does not read, or names a reranker directory that is not a cross-encoder, is an
// error.
func applyRecipe(ctx context.Context, cfg *ServeConfig) error {
	if cfg.Library == "" || cfg.Index != "" || cfg.Pretrained == "" || cfg.NoRecipe || (cfg.Hybrid != "" && cfg.Clauses != nil && cfg.Reranker != "") {
		return nil
	}
	r, err := ModelRecipe(ctx, cfg.Pretrained)
	if err != nil {
		return fmt.Errorf("serve: -model %s: %w", cfg.Pretrained, err)
	}
	if r == nil {
		return nil
	}
	if r.Clauses != nil && cfg.Clauses == nil {
		c := r.Clauses.Options()
		cfg.Clauses = &c
	}
	if r.Hybrid != nil && cfg.Hybrid == "" {
		cfg.Hybrid, cfg.HybridWeight, cfg.HybridAdaptive = r.Hybrid.Fusion, r.Hybrid.Weight, r.Hybrid.Adaptive
	}
	if rr := r.Reranker; rr != nil && cfg.Reranker == "" {
		cfg.Reranker, cfg.Depth, cfg.RerankWeight = rr.Dir, rr.Depth, -1
		if rr.Weight != nil {
			cfg.RerankWeight = *rr.Weight
		}
	}
	return nil
}

// ModelRecipe returns the retrieval recipe (export.Recipe, toolret_recipe.json) of the
// pre-trained model ref names (a directory or a hub id): nil when it has none, or is a run.
// A recipe that does not read or validate is an error naming the file.
func ModelRecipe(ctx context.Context, ref string) (*export.Recipe, error) {
	dir, err := hub.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !export.IsHFDir(dir) {
		return nil, nil
	}
	return export.ReadRecipe(dir)
}

// startGateway reads the upstream configuration, syncs the index to the library and
// connects the MCP upstreams in the background.
func startGateway(ctx context.Context, cfg ServeConfig, lib *library.Library, st *store.Store, pg *pgstore.Store, log *slog.Logger) (*gateway.Gateway, error) {
	var up *gateway.Upstreams
	if cfg.Upstreams != "" {
		var err error
		if up, err = gateway.ReadUpstreams(cfg.Upstreams); err != nil {
			return nil, err
		}
	}
	opts := gateway.Options{Library: lib, LibraryPath: cfg.Library, Store: st, Upstreams: up,
		UsageLog: filepath.Join(cfg.State, gateway.UsageFile), K: cfg.K, MaxK: cfg.MaxK, Log: log}
	if pg != nil {
		opts.UsageLog, opts.UsageDB, opts.LibraryDB = "", pg, pg
		opts.UsageSpool = filepath.Join(cfg.State, gateway.UsageSpoolFile)
	}
	gw, err := gateway.New(opts)
	if err != nil {
		return nil, err
	}
	lib = gw.Library() // the database's, with -database
	if _, _, _, err := gw.SyncIndex(); err != nil {
		gw.Close()
		return nil, fmt.Errorf("syncing the index to %s: %w", cfg.Library, err)
	}
	callable := 0
	for i := range lib.Tools {
		if gw.Callable(&lib.Tools[i]) {
			callable++
		}
	}
	log.Info("gateway", "library", cfg.Library, "tools", len(lib.Tools), "callable", callable, "upstreams", cfg.Upstreams, "state", cfg.State)
	gw.Start(ctx)
	// toolret import -out LIB rewrites the file: the gateway serves the new library at once.
	if err := gw.WatchLibrary(ctx); err != nil {
		log.Warn("the library file is not watched: a re-import reaches the server only at its restart", "library", cfg.Library, "error", err.Error())
	}
	return gw, nil
}

// wantsBF16 reports whether precision resolves to bf16 on be (ONNX Runtime does not run bf16).
func wantsBF16(precision string, be compute.Backend) bool {
	if precision == "" {
		return false
	}
	p, _, _, err := backend.ResolvePrecision("-precision", precision, backend.NameOf(be))
	return err == nil && p == backend.BF16
}

// indexBackend returns the backend that builds the zero-shot index (ServeConfig.IndexBackend):
// "" is be, the serving backend; "auto" is ONNX Runtime when present (an onnx backend that
// fails to open is logged and be is used), else be.
func indexBackend(cfg ServeConfig, be compute.Backend, log *slog.Logger) (compute.Backend, error) {
	name := strings.TrimSpace(cfg.IndexBackend)
	if name == "" {
		return be, nil
	}
	if name != "auto" {
		b, err := backend.Open(name)
		if err != nil {
			return nil, fmt.Errorf("-index-backend: %w", err)
		}
		return b, nil
	}
	if backend.Auto() != "onnx" || backend.RunsONNX(be) || cfg.Quantize.Int8() || wantsBF16(cfg.Precision, be) {
		return be, nil
	}
	b, err := backend.Open("onnx")
	if err != nil {
		log.Warn("index backend: ONNX Runtime did not open; building on the serving backend", "backend", be.Name(), "error", err.Error())
		return be, nil
	}
	return b, nil
}
