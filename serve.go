package toolret

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/retriever"
	"github.com/toolret/toolret/serve"
)

// ServeConfig configures Serve. Zero fields take the defaults DefaultServeConfig gives.
type ServeConfig struct {
	// Index is the exported index directory (Export with export.FormatIndex); tool updates
	// are written into it.
	Index string
	// Addr is the HTTP listen address.
	Addr string
	// MCP is "" (HTTP only), "stdio" (MCP on standard input and output, no HTTP) or "http"
	// (the MCP streamable HTTP endpoint /mcp beside the HTTP API).
	MCP string
	// Backend names the compute backend (backend.Open).
	Backend string
	// K is the number of tools a request gets when it gives none; MaxK the most it may ask.
	K, MaxK int
	// Reranker is an exported cross-encoder reranking the top Depth tools; RerankWeight in
	// [0, 1] interpolates it with the first stage (-1: the cross-encoder's order alone).
	Reranker     string
	Depth        int
	RerankWeight float64
	// Hybrid fuses the index's first stage with BM25: "", "rrf", "minmax" or "zscore", the
	// dense side weighted HybridWeight (minmax and zscore).
	Hybrid       string
	HybridWeight float64
	// NoRefiner serves the index's first stage without its packaged refiner.
	NoRefiner bool
	// Batching embeds the queries of concurrent requests together (retriever.Batching; zero
	// MaxBatch: each request alone); QueryCache keeps the embeddings of that many recent
	// query texts (0: none).
	Batching   retriever.Batching
	QueryCache int
	// MaxBatch, MaxBody, Timeout and Grace bound requests and the shutdown.
	MaxBatch int
	MaxBody  int64
	Timeout  time.Duration
	Grace    time.Duration
	// CompactEvery is the number of logged tool updates compacted into the index at once (0:
	// only at shutdown).
	CompactEvery int
	// Model is the model name reported by /v1/embeddings (default: the index directory's name).
	Model string
	// Token, when set, is the bearer token that tool updates need (the command reads
	// TOOLRET_TOKEN).
	Token string
	// Log receives one JSON line per event; nil: standard error.
	Log *slog.Logger
}

// DefaultServeConfig returns the configuration `toolret serve` starts from.
func DefaultServeConfig() ServeConfig {
	return ServeConfig{Addr: "127.0.0.1:8080", K: 5, MaxK: 100, Depth: 20, RerankWeight: -1, HybridWeight: 0.5,
		Batching: retriever.DefaultBatching, QueryCache: 10000,
		MaxBatch: 64, MaxBody: 1 << 20, Timeout: 10 * time.Second, Grace: 30 * time.Second, CompactEvery: 1000}
}

// Serve serves cfg.Index until ctx ends, then shuts down gracefully: no new connections,
// requests under way finish (up to cfg.Grace), pending tool updates are compacted.
func Serve(ctx context.Context, cfg ServeConfig) error {
	if cfg.Index == "" {
		return errors.New("serve: no index given (-index)")
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if cfg.Model == "" {
		abs, err := filepath.Abs(cfg.Index)
		if err != nil {
			return fmt.Errorf("-index %s: %w", cfg.Index, err)
		}
		cfg.Model = filepath.Base(abs)
	}
	be, err := backend.Open(backend.Name(cfg.Backend))
	if err != nil {
		return fmt.Errorf("-backend: %w", err)
	}
	ropts := []retriever.Option{retriever.WithBackend(be), retriever.WithBatching(cfg.Batching), retriever.WithQueryCache(cfg.QueryCache)}
	if cfg.Reranker != "" {
		ropts = append(ropts, retriever.WithReranker(cfg.Reranker, cfg.Depth))
		if cfg.RerankWeight != -1 {
			ropts = append(ropts, retriever.WithInterpolation(float32(cfg.RerankWeight)))
		}
	}
	if cfg.NoRefiner {
		ropts = append(ropts, retriever.WithoutRefiner())
	}
	if cfg.Hybrid != "" {
		ropts = append(ropts, retriever.WithHybrid(cfg.Hybrid, cfg.HybridWeight))
	}
	start := time.Now()
	store, err := serve.Open(cfg.Index, cfg.CompactEvery, ropts...)
	if err != nil {
		return err
	}
	lib := store.R.Library()
	log.Info("index loaded", "index", cfg.Index, "tools", lib.Len(), "version", lib.Version, "replayed_updates", store.Pending(),
		"dim", store.R.Dim(), "tool_updates", store.R.CanEmbedTools() == nil, "hybrid", cfg.Hybrid, "ms", time.Since(start).Milliseconds())
	scfg := serve.Config{DefaultK: cfg.K, MaxK: cfg.MaxK, MaxBatch: cfg.MaxBatch, MaxBody: cfg.MaxBody, Timeout: cfg.Timeout,
		Token: cfg.Token, Model: cfg.Model, MCP: cfg.MCP == "http", Logger: log}
	if cfg.MCP == "stdio" {
		err := serve.NewMCP(store, scfg).Run(ctx, &mcp.StdioTransport{})
		if cerr := store.Close(); err == nil || errors.Is(err, context.Canceled) {
			err = cerr
		}
		return err
	}
	if cfg.Token == "" {
		log.Warn("TOOLRET_TOKEN is not set: anyone who reaches the server can add and delete tools")
	}
	srv := &http.Server{
		Handler:           serve.New(store, scfg).Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       cfg.Timeout + 5*time.Second,
		WriteTimeout:      2*cfg.Timeout + 5*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		store.Close()
		return fmt.Errorf("-addr: %w", err)
	}
	log.Info("listening", "addr", ln.Addr().String(), "mcp", cfg.MCP == "http", "auth", cfg.Token != "")
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		store.Close()
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests under way", "grace", cfg.Grace.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("requests still running after the grace period were cut", "error", err.Error())
		srv.Close()
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("compacting updates at shutdown: %w", err)
	}
	lib = store.R.Library()
	log.Info("stopped", "tools", lib.Len(), "version", lib.Version)
	return nil
}
