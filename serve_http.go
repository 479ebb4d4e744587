package toolret

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/toolret/toolret/serve"
	"github.com/toolret/toolret/toolindex/store"
)

// httpFront is Serve's HTTP side: it listens from the start, so that /livez answers while
// the index loads and the model warms up and /readyz says when the server is ready, and it
// drains at the end: /readyz at 503 first, then no new connections while requests under way
// finish.
type httpFront struct {
	gate   *serve.Gate
	srv    *http.Server
	ln     net.Listener
	done   chan error
	log    *slog.Logger
	served bool
}

// listenEarly starts the HTTP server on cfg.Addr behind a gate that is starting.
func listenEarly(cfg ServeConfig, log *slog.Logger) (*httpFront, error) {
	f := &httpFront{gate: serve.NewGate("loading the index"), done: make(chan error, 1), log: log}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("-addr: %w", err)
	}
	lim := serve.DefaultLimits(cfg.Timeout)
	if cfg.HeaderTimeout > 0 {
		lim.ReadHeaderTimeout = cfg.HeaderTimeout
	}
	lim.MaxConns = cfg.MaxConns
	f.ln = serve.LimitConns(ln, lim.MaxConns)
	f.srv = serve.NewHTTPServer(f.gate.Handler(), lim, log)
	go func() { f.done <- f.srv.Serve(f.ln) }()
	log.Info("accepting connections", "addr", ln.Addr().String(), "ready", false, "max_conns", lim.MaxConns,
		"header_timeout", lim.ReadHeaderTimeout.String(), "read_timeout", lim.ReadTimeout.String())
	return f, nil
}

// abort closes the server when Serve fails before serving.
func (f *httpFront) abort() {
	if f != nil && !f.served {
		f.srv.Close()
	}
}

// stage tells /readyz what the starting server does.
func (f *httpFront) stage(s string) {
	if f != nil {
		f.gate.Stage(s)
	}
}

// serve answers with h from now on (each answer written within writeTimeout), marks the
// server ready (ready while the store takes updates), and once ctx ends drains: /readyz at
// 503 at once, cfg.DrainDelay more of answering, then no new connections and up to
// cfg.Grace for the requests under way; then closeAll (the gateway, the store's last
// compaction).
func (f *httpFront) serve(ctx context.Context, cfg ServeConfig, h http.Handler, writeTimeout time.Duration, st *store.Store,
	info map[string]any, closeAll func() error) error {
	f.served = true
	f.gate.SetHandler(h, writeTimeout)
	f.gate.Ready(info, st.Healthy)
	f.log.Info("listening", "addr", f.ln.Addr().String(), "ready", true, "mcp", cfg.MCP == "http", "auth", cfg.Token != "", "keys", cfg.Keys.Len(),
		"gateway", info["gateway"],
		"max_inflight", cfg.MaxInFlight, "startup_ms", info["startup_ms"])
	select {
	case err := <-f.done:
		closeAll()
		return err
	case <-ctx.Done():
	}
	f.gate.Drain()
	f.log.Info("shutting down: not ready; finishing requests under way", "drain_delay", cfg.DrainDelay.String(), "grace", cfg.Grace.String())
	if cfg.DrainDelay > 0 {
		select {
		case <-time.After(cfg.DrainDelay):
		case err := <-f.done:
			f.done <- err
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Grace)
	defer cancel()
	start := time.Now()
	if err := f.srv.Shutdown(sctx); err != nil {
		f.log.Warn("requests still running after the grace period were cut", "grace", cfg.Grace.String(), "error", err.Error())
		f.srv.Close()
	}
	f.log.Info("requests finished", "ms", time.Since(start).Milliseconds())
	if err := closeAll(); err != nil {
		return fmt.Errorf("compacting updates at shutdown: %w", err)
	}
	lib := st.R.Library()
	f.log.Info("stopped", "tools", lib.Len(), "version", lib.Version)
	return nil
}

// warmUp runs st's models on every input shape (toolindex.Warmup) unless cfg.Warmup is 0,
// and returns what it did for /readyz and the log.
func warmUp(ctx context.Context, cfg ServeConfig, st *store.Store, log *slog.Logger) (map[string]any, error) {
	if cfg.Warmup <= 0 {
		return map[string]any{"warmup": "off"}, nil
	}
	rep, err := st.R.Warmup(ctx, cfg.Warmup)
	if err != nil {
		return nil, err
	}
	log.Info("warmed up", "lengths", rep.Lengths, "max_rows", cfg.Warmup, "shapes", rep.Shapes, "retrievals", rep.Retrievals, "ms", rep.Duration.Milliseconds())
	return map[string]any{"warmup": map[string]any{"lengths": rep.Lengths, "max_rows": cfg.Warmup, "shapes": rep.Shapes,
		"retrievals": rep.Retrievals, "ms": rep.Duration.Milliseconds()}}, nil
}
