// Package servecmd is the `toolret serve` command; it answers tool-retrieval requests from an exported index (cmd/export -format
// index) over HTTP, or over MCP for agents, with a live tool library.
//
//	serve -index DIR [-addr 127.0.0.1:8080] [-backend go] [-k 5] [-reranker DIR -depth 20]
//	      [-max-k 100] [-max-batch 64] [-max-body 1048576] [-timeout 10s] [-grace 30s]
//	      [-compact-every 1000] [-model NAME] [-mcp stdio|http] [-hybrid rrf|minmax|zscore [-hybrid-weight W] | -no-recipe]
//	      [-ensemble DIR,... [-ensemble-fusion rrf|minmax|zscore] [-ensemble-weights W,...]]
//	      [-ann auto|on|off] [-database URL] [-warmup 1] [-drain-delay 0s] [-max-inflight 512] [-max-conns 4096] [-header-timeout 5s]
//	      [-quantize int8|int8-tensor|none (with -backend onnx)] [-precision fp32|bf16|auto]
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
// A model directory that carries its recipe (toolret_recipe.json, export -hybrid, -clauses,
// -recipe-reranker) is served as it says without flags: with -library -model DIR its BM25
// fusion, clauses and cross-encoder reranker are applied in that order, and an -index
// exported from it records them (the cross-encoder copied into it) and applies them.
// -hybrid, -clauses and -reranker (with -depth, -rerank-weight) replace the recipe's,
// -no-recipe serves the dense first stage.
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

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/internal/flagcfg"
	"github.com/toolret/toolret/serve"
)

// options is what serve's flags give: the server's configuration, and the API keys file
// -keys that fills its Keys.
type options struct {
	cfg  toolret.ServeConfig
	keys string
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

// serveFlags returns serve's flags and the options they write: one flag per field of
// toolret.ServeConfig (flagcfg.Bind: its tags name the flag and give its help, its value in
// DefaultServeConfig is the default), the shared -ensemble flags, and -keys.
func serveFlags() (*flag.FlagSet, *options, *cli.Ensemble, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	o := &options{cfg: toolret.DefaultServeConfig()}
	if _, err := flagcfg.Bind(fs, &o.cfg); err != nil {
		return nil, nil, nil, err
	}
	ens := cli.EnsembleFlags(fs)
	fs.StringVar(&o.keys, "keys", os.Getenv("TOOLRET_KEYS"), "API keys `FILE` (lines NAME KEY SCOPES, scopes search, call, admin); every endpoint but /healthz, /metrics and /openapi.json then needs one (default $TOOLRET_KEYS)")
	return fs, o, ens, nil
}

func parse(args []string) (*options, error) {
	fs, o, ens, err := serveFlags()
	if err != nil {
		return nil, err
	}
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	c := &o.cfg
	if c.Quantize, err = export.ParseQuantization(string(c.Quantize)); err != nil {
		return nil, fmt.Errorf("-%w", err)
	}
	if c.Precision != "" {
		if err := backend.CheckPrecision("-precision", c.Precision); err != nil {
			return nil, err
		}
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case c.Index == "" && c.Library == "":
		return nil, errors.New("-index is required (or -library LIB.jsonl with -model REF)")
	case c.Library == "" && (c.Upstreams != "" || c.State != ""):
		return nil, errors.New("-upstreams and -state apply to -library")
	case c.Library != "" && c.Index == "" && c.Model == "":
		return nil, errors.New("-library needs -model (the pre-trained model to index it with) or an exported -index")
	}
	if err := cli.First(cli.NonNegative("rate", c.Rate), cli.NonNegative("burst", c.Burst)); err != nil {
		return nil, err
	}
	switch c.MCP {
	case "", "stdio", "http":
	default:
		return nil, fmt.Errorf("-mcp %q: want stdio or http", c.MCP)
	}
	if err := cli.First(cli.Positive("k", c.K), cli.Positive("depth", c.Depth), cli.Positive("max-k", c.MaxK),
		cli.Positive("max-batch", c.MaxBatch), cli.Positive("max-body", c.MaxBody), cli.Positive("timeout", c.Timeout.Seconds()),
		cli.NonNegative("grace", c.Grace.Seconds()), cli.NonNegative("compact-every", c.CompactEvery), cli.NonNegative("database-log-keep", c.DatabaseLogKeep), cli.NonNegative("embed-batch", c.Batching.MaxBatch),
		cli.NonNegative("drain-delay", c.DrainDelay.Seconds()), cli.NonNegative("max-inflight", c.MaxInFlight), cli.NonNegative("max-conns", c.MaxConns),
		cli.Positive("header-timeout", c.HeaderTimeout.Seconds()), cli.NonNegative("warmup", c.Warmup),
		cli.Positive("embed-tokens", c.Batching.MaxTokens), cli.NonNegative("embed-wait", c.Batching.MaxWait.Seconds()), cli.NonNegative("query-cache", c.QueryCache)); err != nil {
		return nil, err
	}
	if c.RerankWeight != -1 {
		if c.Reranker == "" {
			return nil, errors.New("-rerank-weight needs -reranker")
		}
		if c.RerankWeight < 0 || c.RerankWeight > 1 {
			return nil, fmt.Errorf("-rerank-weight %g: want a weight in [0, 1], or -1 for none", c.RerankWeight)
		}
	}
	weighted := cli.Set(fs)["hybrid-weight"]
	switch c.Hybrid {
	case "":
		if weighted {
			return nil, errors.New("-hybrid-weight needs -hybrid minmax or zscore")
		}
	case "rrf":
		if weighted {
			return nil, errors.New("-hybrid-weight applies to -hybrid minmax or zscore; rrf has no weight")
		}
		c.HybridWeight = 0
	case "minmax", "zscore":
		if !(c.HybridWeight >= 0 && c.HybridWeight <= 1) {
			return nil, fmt.Errorf("-hybrid-weight %g: want a weight in [0, 1]", c.HybridWeight)
		}
	default:
		return nil, fmt.Errorf("-hybrid %q: want rrf, minmax or zscore", c.Hybrid)
	}
	if c.Ensemble, c.EnsembleFusion, c.EnsembleWeights, err = ens.Values(); err != nil {
		return nil, err
	}
	if len(c.Ensemble) > 0 && (c.Index == "" || c.Library != "") {
		return nil, errors.New("-ensemble fuses -index with more exported indexes: give -index, without -library")
	}
	if c.ANN != "auto" && c.ANN != "on" && c.ANN != "off" {
		return nil, fmt.Errorf("-ann %q: want auto, on or off", c.ANN)
	}
	if c.K > c.MaxK {
		return nil, fmt.Errorf("-k %d is above -max-k %d", c.K, c.MaxK)
	}
	if c.Model == "" && c.Index != "" {
		abs, err := filepath.Abs(c.Index)
		if err != nil {
			return nil, fmt.Errorf("-index %s: %w", c.Index, err)
		}
		c.Model = filepath.Base(abs)
	}
	return o, nil
}

func run(o *options, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }() // a second signal kills the process
	cfg := o.cfg
	if o.keys != "" {
		var err error
		if cfg.Keys, err = serve.ReadKeys(o.keys); err != nil {
			return fmt.Errorf("-keys: %w", err)
		}
	}
	if cfg.Library != "" && cfg.Index == "" { // -model is the pre-trained model that indexes the library
		cfg.Pretrained, cfg.Model = cfg.Model, ""
	}
	cfg.Token, cfg.Log = os.Getenv("TOOLRET_TOKEN"), log
	return toolret.Serve(ctx, cfg)
}
