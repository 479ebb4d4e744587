package serve

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Gate fronts the HTTP server through its life, so that a process can listen before its
// index is loaded and stop taking traffic before it exits:
//
//	GET /livez   200 while the process runs (liveness: restart it only when this fails)
//	GET /readyz  200 once the server is ready (index and library loaded, the model warmed
//	             up, every check passing: the store takes updates); 503 while it starts, when
//	             a check fails, and from the moment it begins to drain (readiness: send it
//	             traffic only while this answers 200)
//
// Until SetHandler, and then until Ready, every other request gets a 503 with Retry-After
// saying what the server is doing; after Ready (and while draining) the handler answers
// them, with a write deadline of the handler's write timeout per request.
type Gate struct {
	state   atomic.Int32
	stage   atomic.Pointer[string]
	h       atomic.Pointer[gated]
	started time.Time

	mu     sync.Mutex
	checks []func() error
	info   map[string]any
}

type gated struct {
	h            http.Handler
	writeTimeout time.Duration
}

// defaultWriteTimeout bounds the writing of the gate's own answers.
const defaultWriteTimeout = 10 * time.Second

const (
	gateStarting int32 = iota
	gateReady
	gateDraining
)

// NewGate returns a gate that is starting: stage says what the server does ("loading the
// index").
func NewGate(stage string) *Gate {
	g := &Gate{started: time.Now()}
	g.stage.Store(&stage)
	return g
}

// Stage sets what the starting server does now (shown by /readyz and in the 503 answers).
func (g *Gate) Stage(stage string) { g.stage.Store(&stage) }

// SetHandler sets the handler answering requests once the server is ready; writeTimeout
// (0: 10 s) bounds the time to write each answer (http.ResponseController's write deadline).
func (g *Gate) SetHandler(h http.Handler, writeTimeout time.Duration) {
	g.h.Store(&gated{h: h, writeTimeout: writeTimeout})
}

// Ready marks the server ready: /readyz answers 200 (with info) while every check passes.
func (g *Gate) Ready(info map[string]any, checks ...func() error) {
	g.mu.Lock()
	g.info, g.checks = info, checks
	g.mu.Unlock()
	g.state.CompareAndSwap(gateStarting, gateReady)
}

// Drain marks the server draining: /readyz answers 503 from now on; requests are still
// answered (the caller stops the listener and waits for those under way).
func (g *Gate) Drain() { g.state.Store(gateDraining) }

// IsReady reports whether /readyz would answer 200 now, and if not why.
func (g *Gate) IsReady() (bool, string) {
	switch g.state.Load() {
	case gateStarting:
		return false, "starting: " + *g.stage.Load()
	case gateDraining:
		return false, "draining: shutting down"
	}
	g.mu.Lock()
	checks := g.checks
	g.mu.Unlock()
	for _, c := range checks {
		if err := c(); err != nil {
			return false, err.Error()
		}
	}
	return true, "ready"
}

// Handler returns the gate's HTTP handler.
func (g *Gate) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every answer gets a write deadline: the server has none of its own (the handler's
		// is known only once it is set), and a deadline set for an earlier request on a
		// keep-alive connection must not cut this one.
		h := g.h.Load()
		wt := defaultWriteTimeout
		if h != nil && h.writeTimeout > 0 {
			wt = h.writeTimeout
		}
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wt))
		switch r.URL.Path {
		case "/livez":
			writeJSON(w, http.StatusOK, map[string]any{"status": "alive", "uptime_s": int64(time.Since(g.started).Seconds())})
			return
		case "/readyz":
			g.readyz(w)
			return
		}
		if h == nil || g.state.Load() == gateStarting {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting", "stage": *g.stage.Load(),
				"error": "the server is starting (" + *g.stage.Load() + "): retry when GET /readyz answers 200"})
			return
		}
		h.h.ServeHTTP(w, r)
	})
}

func (g *Gate) readyz(w http.ResponseWriter) {
	ok, why := g.IsReady()
	if !ok {
		status := "starting"
		switch g.state.Load() {
		case gateDraining:
			status = "draining"
		case gateReady:
			status = "failing"
		}
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "status": status, "reason": why})
		return
	}
	out := map[string]any{"ready": true, "status": "ready"}
	g.mu.Lock()
	for k, v := range g.info {
		out[k] = v
	}
	g.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}
