package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// status sends GET url and returns its status and body (0 when no answer came).
func status(c *http.Client, url string) (int, string) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDrain sends SIGTERM to the real binary while a request is under way (its body half
// sent): /readyz answers 503 at once while the server still takes connections for
// -drain-delay, then new connections are refused; the request under way is answered in
// full; the process exits 0 with its last log line written.
func TestDrain(t *testing.T) {
	bin := buildServe(t)
	p := startServe(t, bin, newIndex(t), "-drain-delay", "1s", "-grace", "20s")
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if s, b := status(c, p.url+"/readyz"); s != 200 {
		t.Fatalf("/readyz after the listening line: %d %s", s, b)
	}
	addr := strings.TrimPrefix(p.url, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"query": "what is the weather in Lisbon tomorrow", "k": 3}`
	half := len(body) / 2
	fmt.Fprintf(conn, "POST /v1/retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:half])
	time.Sleep(200 * time.Millisecond) // the server has the request
	signalled := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)

	// Not ready at once, while still answering.
	var notReady, refused time.Duration
	for notReady == 0 && time.Since(signalled) < 5*time.Second {
		if s, _ := status(c, p.url+"/readyz"); s == 503 {
			notReady = time.Since(signalled)
		}
	}
	if notReady == 0 || notReady > time.Second {
		t.Fatalf("/readyz still 200 %v after SIGTERM", time.Since(signalled))
	}
	if s, b := status(c, p.url+"/livez"); s != 200 {
		t.Fatalf("/livez while draining: %d %s", s, b)
	}
	// New connections refused once the drain delay is over.
	for refused == 0 && time.Since(signalled) < 10*time.Second {
		if probe, err := net.DialTimeout("tcp", addr, time.Second); err != nil {
			refused = time.Since(signalled)
		} else {
			probe.Close() // a new connection left open would hold Shutdown for 5 s
			time.Sleep(20 * time.Millisecond)
		}
	}
	if refused < time.Second || refused > 5*time.Second {
		t.Fatalf("new connections refused %v after SIGTERM, want after the 1s drain delay", refused)
	}
	if s, b := status(c, p.url+"/readyz"); s != 0 {
		t.Fatalf("a request after the drain delay: %d %s", s, b)
	}
	// The request under way completes.
	io.WriteString(conn, body[half:])
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the request under way at SIGTERM got no answer: %v\n%s", err, p.logs.String())
	}
	var out RetrieveResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || len(out.Tools) != 3 {
		t.Fatalf("the request under way at SIGTERM: %d, %d tools, %v", resp.StatusCode, len(out.Tools), err)
	}
	if err := p.wait(t, time.Minute); err != nil {
		t.Fatalf("exit after SIGTERM: %v (want 0)\n%s", err, p.logs.String())
	}
	if d := time.Since(signalled); d > 8*time.Second { // Shutdown waits 5 s for a connection that sent nothing
		t.Fatalf("exit %v after SIGTERM: the drain waited for something other than the request", d)
	}
	t.Logf("not ready %v after SIGTERM, connections refused after %v, exit 0 after %v", notReady.Round(time.Millisecond), refused.Round(time.Millisecond), time.Since(signalled).Round(time.Millisecond))
	lines := strings.Split(strings.TrimSpace(p.logs.String()), "\n")
	var last struct{ Msg string }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Msg != "stopped" {
		t.Fatalf("last log line %q (%v), want the complete \"stopped\" line", lines[len(lines)-1], err)
	}
	for _, want := range []string{`"msg":"shutting down: not ready`, `"msg":"requests finished"`, `"path":"/v1/retrieve","route":"retrieve","status":200`} {
		if !strings.Contains(p.logs.String(), want) {
			t.Fatalf("log lacks %s:\n%s", want, p.logs.String())
		}
	}
}

// TestReadiness starts the real binary and probes it from the moment it accepts
// connections: /livez answers 200 from the first, /readyz and the API 503 while the index
// loads and the model warms up, then /readyz 200 with the warm-up's report.
func TestReadiness(t *testing.T) {
	bin := buildServe(t)
	cmd := exec.Command(bin, "serve", "-index", newIndex(t), "-addr", "127.0.0.1:0", "-backend", "go", "-warmup", "32")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	logs := &syncBuffer{}
	addr := make(chan string, 1)
	warmed := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
			var l struct{ Msg, Addr string }
			json.Unmarshal(sc.Bytes(), &l)
			switch l.Msg {
			case "accepting connections":
				addr <- l.Addr
			case "warmed up":
				warmed <- true
			}
		}
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a
	case <-time.After(time.Minute):
		t.Fatalf("no \"accepting connections\" line:\n%s", logs.String())
	}
	c := &http.Client{Timeout: 5 * time.Second}
	stages := map[string]int{}
	var readyAt time.Time
	var readyBody string
	for deadline := time.Now().Add(2 * time.Minute); readyAt.IsZero(); {
		if time.Now().After(deadline) {
			t.Fatalf("never ready:\n%s", logs.String())
		}
		if s, b := status(c, url+"/livez"); s != 200 {
			t.Fatalf("/livez while starting: %d %s", s, b)
		}
		s, b := status(c, url+"/readyz")
		switch s {
		case 200:
			readyAt, readyBody = time.Now(), b
		case 503:
			var r struct{ Reason string }
			json.Unmarshal([]byte(b), &r)
			stages[r.Reason]++
			resp, err := c.Post(url+"/v1/retrieve", "application/json", strings.NewReader(`{"query": "weather"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 503 && readyAt.IsZero() {
				if s, _ := status(c, url+"/readyz"); s != 200 {
					t.Fatalf("a request before the server is ready: %d", resp.StatusCode)
				}
			}
		default:
			t.Fatalf("/readyz: %d %s", s, b)
		}
	}
	t.Logf("503 answers by stage before ready: %v", stages)
	if stages["starting: warming up the model"] == 0 {
		t.Fatalf("no 503 seen while warming up (stages %v); the warm-up may have been too quick to catch", stages)
	}
	select {
	case <-warmed:
	case <-time.After(5 * time.Second):
		t.Fatalf("ready without a \"warmed up\" log line:\n%s", logs.String())
	}
	var r struct {
		Ready  bool
		Warmup struct{ Shapes, Retrievals int }
	}
	if err := json.Unmarshal([]byte(readyBody), &r); err != nil || !r.Ready || r.Warmup.Shapes == 0 || r.Warmup.Retrievals == 0 {
		t.Fatalf("/readyz when ready: %s (%v)", readyBody, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}
