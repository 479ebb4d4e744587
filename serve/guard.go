package serve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Limits bound what slow, large or many clients can take of a server: the timeouts and the
// header size of its http.Server (NewHTTPServer) and its open connections (LimitConns). The
// request body size and the requests answered at once are Config.MaxBody and
// Config.MaxInFlight.
type Limits struct {
	// ReadHeaderTimeout closes a connection whose request headers take longer (slowloris);
	// ReadTimeout one whose request, body included, takes longer; IdleTimeout a keep-alive
	// connection idle that long. Each request's write deadline is set per request (Gate).
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// MaxHeaderBytes is the request header limit (431 over it).
	MaxHeaderBytes int
	// MaxConns is the most open connections: a connection past it is answered 503 and closed
	// (0: no limit).
	MaxConns int
}

// DefaultLimits are serve's defaults for requests of up to timeout.
func DefaultLimits(timeout time.Duration) Limits {
	return Limits{ReadHeaderTimeout: 5 * time.Second, ReadTimeout: timeout + 5*time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, MaxConns: 4096}
}

// NewHTTPServer returns an http.Server of h with l's timeouts and header limit, logging its
// errors (TLS, malformed requests, accept errors) to log at level warn.
func NewHTTPServer(h http.Handler, l Limits, log *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout,
		IdleTimeout: l.IdleTimeout, MaxHeaderBytes: l.MaxHeaderBytes, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}

// LimitConns returns a listener of ln that keeps at most n connections open: one accepted
// past them is answered "503 Service Unavailable" (with Retry-After) and closed at once,
// so that it neither waits in the backlog nor takes a file descriptor for long. n <= 0: ln.
func LimitConns(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		return ln
	}
	return &connLimiter{Listener: ln, max: int64(n)}
}

type connLimiter struct {
	net.Listener
	max      int64
	open     atomic.Int64
	rejected atomic.Int64
}

// overloaded is the raw answer to a connection past the limit.
var overloaded = func() []byte {
	body := `{"error":"the server has as many connections open as it takes (-max-conns): retry"}` + "\n"
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.rejected.Add(1)
		go func() {
			c.SetDeadline(time.Now().Add(time.Second))
			c.Write(overloaded)
			c.Close()
		}()
	}
}

type limitedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// guard is the server's outermost handler: it reads the request body first (at most
// Config.MaxBody bytes: 413 past it, at once when Content-Length says so), so that a client
// sending slowly holds a connection but not a request slot, then admits at most
// Config.MaxInFlight requests at once (503 with Retry-After past it, without waiting).
// /healthz and /metrics are always admitted.
type guard struct {
	s        *Server
	next     http.Handler
	slots    chan struct{}
	inFlight prometheus.Gauge
	rejected *prometheus.CounterVec
	lastLog  atomic.Int64 // unix nanoseconds of the last rejection logged
	quiet    atomic.Int64 // rejections not logged since
}

func (s *Server) guard(next http.Handler) http.Handler {
	g := &guard{s: s, next: next}
	if s.cfg.MaxInFlight > 0 {
		g.slots = make(chan struct{}, s.cfg.MaxInFlight)
	}
	g.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "toolret_http_requests_in_flight", Help: "HTTP requests being answered (body read, slot taken), /healthz and /metrics aside."})
	g.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolret_http_requests_rejected_total",
		Help: "HTTP requests refused before a handler ran, by reason: body_too_large, body_unreadable, in_flight (the -max-inflight limit)."}, []string{"reason"})
	s.metrics.reg.MustRegister(g.inFlight, g.rejected)
	return g
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	probe := r.URL.Path == "/healthz" || r.URL.Path == "/metrics"
	if r.Body != nil && r.Body != http.NoBody {
		limit := g.s.cfg.MaxBody
		if r.ContentLength > limit {
			g.reject(w, r, "body_too_large", http.StatusRequestEntityTooLarge, "request body is larger than the limit of %d bytes (-max-body): Content-Length %d", limit, r.ContentLength)
			return
		}
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				g.reject(w, r, "body_too_large", http.StatusRequestEntityTooLarge, "request body is larger than the limit of %d bytes (-max-body)", limit)
			} else {
				g.reject(w, r, "body_unreadable", http.StatusBadRequest, "reading the request body: %v", err)
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	if g.slots != nil && !probe {
		select {
		case g.slots <- struct{}{}:
			defer func() { <-g.slots }()
		default:
			w.Header().Set("Retry-After", "1")
			g.reject(w, r, "in_flight", http.StatusServiceUnavailable, "the server is answering as many requests as it takes at once (%d, -max-inflight): retry", cap(g.slots))
			return
		}
	}
	if !probe {
		g.inFlight.Inc()
		defer g.inFlight.Dec()
	}
	g.next.ServeHTTP(w, r)
}

// reject answers r with status and a JSON error, counts it, and logs it (at most one line a
// second, with the number of rejections not logged since the last line).
func (g *guard) reject(w http.ResponseWriter, r *http.Request, reason string, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if status == http.StatusRequestEntityTooLarge {
		w.Header().Set("Connection", "close") // the rest of the body is not read
	}
	writeJSON(w, status, map[string]string{"error": msg})
	g.rejected.WithLabelValues(reason).Inc()
	g.s.metrics.observe("rejected", status, 0)
	now := time.Now().UnixNano()
	last := g.lastLog.Load()
	if now-last < int64(time.Second) || !g.lastLog.CompareAndSwap(last, now) {
		g.quiet.Add(1)
		return
	}
	g.s.cfg.Logger.Warn("request rejected", "method", r.Method, "path", r.URL.Path, "status", status, "reason", reason,
		"error", msg, "remote", r.RemoteAddr, "not_logged_since", g.quiet.Swap(0))
}
