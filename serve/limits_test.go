package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// limited is a server over a fresh index copy as toolret.Serve runs it: a real listener
// (LimitConns), an http.Server of NewHTTPServer with lim, and a ready gate.
type limited struct {
	addr, url string
	logs      *syncBuffer
	ln        net.Listener
}

func startLimited(t *testing.T, cfg Config, lim Limits, ext Extension) *limited {
	t.Helper()
	st := openStore(t, newIndex(t), 0)
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	cfg.Extension = ext
	g := NewGate("loading")
	g.SetHandler(New(st, cfg).Handler(), 5*time.Second)
	g.Ready(nil, st.Healthy)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln = LimitConns(ln, lim.MaxConns)
	srv := NewHTTPServer(g.Handler(), lim, cfg.Logger)
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		st.Close()
	})
	return &limited{addr: ln.Addr().String(), url: "http://" + ln.Addr().String(), logs: logs, ln: ln}
}

// retrieveOK sends one retrieve request on a new connection and fails the test unless it
// is answered 200 with tools within limit; it returns the latency.
func (l *limited) retrieveOK(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	c := &http.Client{Timeout: limit, Transport: &http.Transport{DisableKeepAlives: true}}
	t0 := time.Now()
	resp, err := c.Post(l.url+"/v1/retrieve", "application/json", strings.NewReader(`{"query": "what is the weather in Lisbon", "k": 3}`))
	if err != nil {
		t.Fatalf("a normal request got no answer within %v: %v", limit, err)
	}
	defer resp.Body.Close()
	var out RetrieveResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || len(out.Tools) != 3 {
		t.Fatalf("a normal request: status %d, %d tools, %v", resp.StatusCode, len(out.Tools), err)
	}
	return time.Since(t0)
}

// dial opens n raw connections to addr.
func dial(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns[i] = c
		t.Cleanup(func() { c.Close() })
	}
	return conns
}

// closedWithin reports whether the server closes c (a read ends) within d, and what it read.
func closedWithin(c net.Conn, d time.Duration) (bool, string) {
	c.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false, string(b)
	}
	return true, string(b)
}

// TestSlowClients holds 100 slowloris connections (headers sent one byte every 100 ms), 20
// connections sending a body one byte every 100 ms and 300 idle connections, against a server
// that answers 4 requests at once: normal requests are answered all along, quickly, and the
// server closes the slow and idle connections at its header and read timeouts.
func TestSlowClients(t *testing.T) {
	lim := Limits{ReadHeaderTimeout: 500 * time.Millisecond, ReadTimeout: 1500 * time.Millisecond, IdleTimeout: time.Second, MaxHeaderBytes: 8 << 10}
	l := startLimited(t, Config{MaxInFlight: 4}, lim, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	trickle := func(c net.Conn, prefix, drip string) {
		defer wg.Done()
		if _, err := io.WriteString(c, prefix); err != nil {
			return
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := io.WriteString(c, drip[i%len(drip):i%len(drip)+1]); err != nil {
				return // the server closed it
			}
		}
	}
	start := time.Now()
	loris := dial(t, l.addr, 100)
	for _, c := range loris {
		wg.Add(1)
		go trickle(c, "POST /v1/retrieve HTTP/1.1\r\nHost: x\r\n", "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n")
	}
	bodies := dial(t, l.addr, 20)
	for _, c := range bodies {
		wg.Add(1)
		go trickle(c, "POST /v1/retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{\"query\": \"", "abcdefgh")
	}
	idle := dial(t, l.addr, 300)
	var worst time.Duration
	for i := 0; i < 10; i++ {
		worst = max(worst, l.retrieveOK(t, 2*time.Second))
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("10 normal requests among %d slowloris, %d slow-body and %d idle connections: slowest %v", len(loris), len(bodies), len(idle), worst)
	for _, tc := range []struct {
		name  string
		conns []net.Conn
		by    time.Duration
		want  string // what the server answers before closing ("" nothing)
	}{
		{"slowloris", loris, lim.ReadHeaderTimeout, ""},
		{"idle", idle, lim.ReadHeaderTimeout, ""},
		{"slow body", bodies, lim.ReadTimeout, "HTTP/1.1 400"},
	} {
		for i, c := range tc.conns {
			// By the limit plus 3 s of slack from the start (a past deadline would fail the read).
			closed, got := closedWithin(c, max(tc.by+3*time.Second-time.Since(start), 200*time.Millisecond))
			if !closed {
				t.Fatalf("%s connection %d still open %v after it began (the limit is %v)", tc.name, i, time.Since(start), tc.by)
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("%s connection %d: the server wrote %q before closing, want %q", tc.name, i, got, tc.want)
			}
		}
	}
	t.Logf("every slow and idle connection closed %v after it began", time.Since(start).Round(time.Millisecond))
	close(stop)
	wg.Wait()
	l.retrieveOK(t, 2*time.Second)
}

// TestLargeBodies sends 100 MB bodies, with a Content-Length and chunked: each is refused
// with a 413 naming -max-body, after the server read at most a little more than the limit,
// and the server goes on answering.
func TestLargeBodies(t *testing.T) {
	const maxBody = 64 << 10
	l := startLimited(t, Config{MaxBody: maxBody}, DefaultLimits(10*time.Second), nil)
	for _, chunked := range []bool{false, true} {
		for _, path := range []string{"/v1/retrieve", "/v1/tools/x", "/nowhere", "/mcp"} {
			c := dial(t, l.addr, 1)[0]
			head := "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
			if chunked {
				head += "Transfer-Encoding: chunked\r\n\r\n"
			} else {
				head += "Content-Length: 104857600\r\n\r\n"
			}
			var sent atomic.Int64
			t0 := time.Now()
			go func() {
				io.WriteString(c, head)
				chunk := bytes.Repeat([]byte("a"), 64<<10)
				if chunked {
					chunk = append([]byte(fmt.Sprintf("%x\r\n", len(chunk))), append(chunk, "\r\n"...)...)
				}
				for sent.Load() < 100<<20 {
					n, err := c.Write(chunk)
					sent.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("chunked %v %s: no answer: %v (sent %d bytes)", chunked, path, err, sent.Load())
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			c.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "larger than the limit of 65536 bytes (-max-body)") {
				t.Fatalf("chunked %v %s: %d %s", chunked, path, resp.StatusCode, b)
			}
			t.Logf("chunked %v %s: 413 after %v, %.1f MB sent", chunked, path, time.Since(t0).Round(time.Millisecond), float64(sent.Load())/(1<<20))
			if sent.Load() > 50<<20 {
				t.Fatalf("chunked %v %s: the client could send %d bytes before the 413", chunked, path, sent.Load())
			}
		}
	}
	l.retrieveOK(t, 2*time.Second)
	if !strings.Contains(l.logs.String(), `"reason":"body_too_large"`) {
		t.Fatalf("no rejection logged:\n%s", l.logs.String())
	}
}

// slowExt is an extension with one endpoint, POST /v1/slow, that answers when release is
// closed.
type slowExt struct {
	release chan struct{}
	entered chan struct{}
}

func (e *slowExt) Routes(r *Router) {
	r.Handle(Route{Pattern: "POST /v1/slow", Name: "slow", Handler: func(w http.ResponseWriter, req *http.Request) (any, error) {
		e.entered <- struct{}{}
		<-e.release
		return map[string]bool{"ok": true}, nil
	}})
}

func (e *slowExt) MCPTools(*mcp.Server) {}

// TestInFlightLimit fills the server's 3 request slots with requests that wait: the next
// request is refused at once with a 503 and Retry-After, /healthz and /metrics still answer
// (the refusal counted), and once the slots free up requests are answered again.
func TestInFlightLimit(t *testing.T) {
	ext := &slowExt{release: make(chan struct{}), entered: make(chan struct{}, 3)}
	l := startLimited(t, Config{MaxInFlight: 3}, DefaultLimits(10*time.Second), ext)
	done := make(chan int, 3)
	for i := 0; i < 3; i++ {
		go func() {
			resp, err := http.Post(l.url+"/v1/slow", "application/json", strings.NewReader(`{}`))
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		<-ext.entered
	}
	t0 := time.Now()
	resp, err := http.Post(l.url+"/v1/retrieve", "application/json", strings.NewReader(`{"query": "weather"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "-max-inflight") {
		t.Fatalf("a request past the limit: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	if d := time.Since(t0); d > time.Second {
		t.Fatalf("the refusal took %v", d)
	}
	for _, p := range []string{"/healthz", "/metrics"} {
		resp, err := http.Get(l.url + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s with every slot taken: %d", p, resp.StatusCode)
		}
		if p == "/metrics" && (!strings.Contains(string(b), `toolret_http_requests_rejected_total{reason="in_flight"} 1`) ||
			!strings.Contains(string(b), "toolret_http_requests_in_flight 3")) {
			t.Fatalf("/metrics lacks the rejection or the requests in flight:\n%s", b)
		}
	}
	close(ext.release)
	for i := 0; i < 3; i++ {
		if s := <-done; s != 200 {
			t.Fatalf("a slow request: %d", s)
		}
	}
	l.retrieveOK(t, 2*time.Second)
}

// TestConnLimit holds as many idle connections as the server takes: the next one is
// answered 503 and closed at once; when the idle ones are closed, requests are answered.
func TestConnLimit(t *testing.T) {
	lim := DefaultLimits(10 * time.Second)
	lim.MaxConns = 20
	l := startLimited(t, Config{}, lim, nil)
	idle := dial(t, l.addr, 20)
	time.Sleep(100 * time.Millisecond) // accepted
	c := dial(t, l.addr, 1)[0]
	closed, got := closedWithin(c, 2*time.Second)
	if !closed || !strings.HasPrefix(got, "HTTP/1.1 503") || !strings.Contains(got, "-max-conns") {
		t.Fatalf("a connection past the limit: closed %v, %q", closed, got)
	}
	if n := l.ln.(*connLimiter).rejected.Load(); n != 1 {
		t.Fatalf("%d connections rejected, want 1", n)
	}
	for _, c := range idle {
		c.Close()
	}
	deadline := time.Now().Add(2 * time.Second)
	for l.ln.(*connLimiter).open.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	l.retrieveOK(t, 2*time.Second)
}

// TestHeaderLimit sends 100 KB of headers: 431, and the server goes on.
func TestHeaderLimit(t *testing.T) {
	l := startLimited(t, Config{}, DefaultLimits(10*time.Second), nil)
	req, _ := http.NewRequestWithContext(context.Background(), "POST", l.url+"/v1/retrieve", strings.NewReader(`{"query": "weather"}`))
	req.Header.Set("X-Big", strings.Repeat("a", 100<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KB of headers: %d", resp.StatusCode)
	}
	l.retrieveOK(t, 2*time.Second)
}
