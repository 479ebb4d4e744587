package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
)

// The tests in this file run the real cmd/serve binary (built once) on 127.0.0.1.

var serveBin struct {
	once sync.Once
	path string
	err  error
	dir  string
}

func buildServe(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs cmd/serve; skipped with -short")
	}
	serveBin.once.Do(func() {
		serveBin.dir, serveBin.err = os.MkdirTemp("", "toolret-serve-bin-")
		if serveBin.err != nil {
			return
		}
		goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goCmd); err != nil {
			goCmd = "go"
		}
		serveBin.path = filepath.Join(serveBin.dir, "toolret")
		out, err := exec.Command(goCmd, "build", "-o", serveBin.path, "github.com/toolret/toolret/cmd/toolret").CombinedOutput()
		if err != nil {
			serveBin.err = fmt.Errorf("go build ./cmd/toolret: %v\n%s", err, out)
		}
	})
	if serveBin.err != nil {
		t.Fatal(serveBin.err)
	}
	return serveBin.path
}

// proc is a running cmd/serve.
type proc struct {
	cmd  *exec.Cmd
	url  string
	logs *syncBuffer
	done chan error
}

// startServe runs the binary on dir and waits for its "listening" line.
func startServe(t *testing.T, bin, dir string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "-index", dir, "-addr", "127.0.0.1:0", "-backend", "go"}, args...)...)
	cmd.Env = append(os.Environ(), "TOOLRET_TOKEN="+testToken)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, logs: &syncBuffer{}, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.logs.Write([]byte(line + "\n"))
			var l struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "listening" {
				addr <- l.Addr
			}
		}
		p.done <- cmd.Wait()
	}()
	select {
	case a := <-addr:
		p.url = "http://" + a
	case err := <-p.done:
		t.Fatalf("serve exited before listening: %v\n%s", err, p.logs.String())
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("serve did not start:\n%s", p.logs.String())
	}
	return p
}

func (p *proc) wait(t *testing.T, limit time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(limit):
		p.cmd.Process.Kill()
		t.Fatalf("serve still running after %v:\n%s", limit, p.logs.String())
	}
	return nil
}

// post sends a JSON request with the token; it returns the status and body, or an error
// when no complete answer came (the server died).
func post(c *http.Client, method, url string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(mustJSON(body))
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// toolState is a tool id's state: absent, or present with title.
type toolState struct {
	present bool
	title   string
}

// TestKill9 kills the server (SIGKILL) at a random moment of a stream of tool updates,
// compacting every 3 updates, and restarts it, three times: every acknowledged update must
// be there (the one in flight at the kill may or may not be), and the index must load.
func TestKill9(t *testing.T) {
	bin := buildServe(t)
	dir := newIndex(t)
	rng := rand.New(rand.NewPCG(11, 12))
	acked := map[string]toolState{}
	var acks int
	type op struct {
		id     string
		before toolState
		after  toolState
	}
	var inflight []op // the request the kill interrupted
	client := &http.Client{Timeout: time.Minute}
	check := func(p *proc) {
		t.Helper()
		for _, o := range inflight {
			status, b, err := post(client, "GET", p.url+"/v1/tools/"+o.id, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got ToolOut
			json.Unmarshal(b, &got)
			now := toolState{status == 200, got.Title}
			if now != o.before && now != o.after {
				t.Fatalf("tool %q after restart: %+v; the interrupted update goes from %+v to %+v", o.id, now, o.before, o.after)
			}
			acked[o.id] = now
		}
		for id, want := range acked {
			status, b, err := post(client, "GET", p.url+"/v1/tools/"+id, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got ToolOut
			json.Unmarshal(b, &got)
			if (status == 200) != want.present || (want.present && got.Title != want.title) {
				t.Fatalf("acknowledged state of tool %q lost: status %d %s, want %+v", id, status, b, want)
			}
		}
		var h struct{ Version int }
		_, b, _ := post(client, "GET", p.url+"/healthz", nil)
		json.Unmarshal(b, &h)
		if h.Version != acks && !(len(inflight) > 0 && h.Version == acks+1) {
			t.Fatalf("library version %d after %d acknowledged updates (interrupted: %d)", h.Version, acks, len(inflight))
		}
		acks = h.Version
		inflight = nil
	}
	next := 0
	for round := 0; round < 3; round++ {
		p := startServe(t, bin, dir, "-compact-every", "3")
		check(p)
		killAt := time.Duration(300+rng.IntN(900)) * time.Millisecond
		killed := time.AfterFunc(killAt, func() { p.cmd.Process.Kill() })
		n := 0
		for {
			var ops []op
			var status int
			var err error
			var live []string
			for id, s := range acked {
				if s.present {
					live = append(live, id)
				}
			}
			switch c := rng.IntN(4); {
			case c == 0 && len(live) > 0:
				id := live[rng.IntN(len(live))]
				ops = []op{{id, acked[id], toolState{}}}
				status, _, err = post(client, "DELETE", p.url+"/v1/tools/"+id, nil)
			default:
				var tools []ToolIn
				for j := 0; j < 1+rng.IntN(2); j++ {
					id := fmt.Sprintf("live-%d", next)
					if c == 1 && len(live) > 0 && j == 0 {
						id = live[rng.IntN(len(live))] // a replacement
					} else {
						next++
					}
					title := fmt.Sprintf("%s rev %d", id, n)
					tools = append(tools, ToolIn{ID: id, Title: title, Text: title + ": " + tool(id, title).Text})
					ops = append(ops, op{id, acked[id], toolState{true, title}})
				}
				status, _, err = post(client, "POST", p.url+"/v1/tools", map[string]any{"tools": tools})
			}
			if err != nil { // killed: this update may or may not have been applied
				inflight = ops
				break
			}
			if status != 200 {
				t.Fatalf("update %v: status %d", ops, status)
			}
			for _, o := range ops {
				acked[o.id] = o.after
			}
			acks++
			n++
		}
		killed.Stop()
		p.wait(t, time.Minute)
		t.Logf("round %d: killed after %v and %d acknowledged updates (%d in total)", round, killAt, n, acks)
		if n == 0 {
			t.Fatalf("round %d: no update acknowledged before the kill:\n%s", round, p.logs.String())
		}
	}
	// A last restart, then a graceful stop: pending updates are compacted into an index that
	// loads with the acknowledged library.
	p := startServe(t, bin, dir, "-compact-every", "3")
	check(p)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, time.Minute); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.logs.String())
	}
	if fi, err := os.Stat(filepath.Join(dir, store.LogFile)); err != nil || fi.Size() != 0 {
		t.Fatalf("update log after a graceful stop: %v, %v", fi, err)
	}
	r, err := toolindex.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range acked {
		i, ok := r.Library().Lookup(id)
		if ok != want.present || (ok && r.Library().Tool(i).Title != want.title) {
			t.Fatalf("compacted index: tool %q present %v, want %+v", id, ok, want)
		}
	}
}

// TestGracefulShutdown sends SIGTERM while clients keep batch requests in flight: every
// answer that comes is a complete 200, requests under way at the signal finish, and the
// process exits 0.
func TestGracefulShutdown(t *testing.T) {
	bin := buildServe(t)
	p := startServe(t, bin, newIndex(t), "-grace", "30s")
	// Every request's queries are new (the query cache answers repeated ones in microseconds,
	// which left the clients between requests rather than in one at the signal): each
	// request embeds its 32 queries, so the four clients are almost always waiting on one.
	var n atomic.Int64
	queries := func() []string {
		q := make([]string, 32)
		r := n.Add(1)
		for i := range q {
			q[i] = fmt.Sprintf("find flights from Lisbon to city number %d tomorrow morning, request %d, cheapest first", i, r)
		}
		return q
	}
	var (
		mu               sync.Mutex
		ok, failed, late int
		bad              []string
		signalled        time.Time
		wg               sync.WaitGroup
	)
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: time.Minute}
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				status, b, err := post(c, "POST", p.url+"/v1/retrieve", map[string]any{"queries": queries(), "k": 20, "with_text": true})
				end := time.Now()
				mu.Lock()
				switch {
				case err != nil:
					failed++ // no answer: a connection the server closed, or refused after the signal
				case status != 200 || !json.Valid(b):
					bad = append(bad, fmt.Sprintf("status %d, %d bytes", status, len(b)))
				default:
					ok++
					if !signalled.IsZero() && start.Before(signalled) && end.After(signalled) {
						late++
					}
				}
				s := signalled
				mu.Unlock()
				if err != nil && !s.IsZero() {
					return
				}
			}
		}()
	}
	time.Sleep(time.Second)
	mu.Lock()
	signalled = time.Now()
	mu.Unlock()
	p.cmd.Process.Signal(syscall.SIGTERM)
	err := p.wait(t, time.Minute)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.logs.String())
	}
	logs := p.logs.String()
	t.Logf("%d answers (%d in flight at the signal), %d requests without an answer", ok, late, failed)
	if len(bad) > 0 {
		t.Fatalf("incomplete or failed answers: %v", bad)
	}
	if late == 0 || ok == 0 {
		t.Fatalf("no request was in flight at the signal (%d answers)", ok)
	}
	if !strings.Contains(logs, `"msg":"shutting down`) || !strings.Contains(logs, `"msg":"stopped"`) {
		t.Fatalf("shutdown not logged:\n%s", logs)
	}
}

// TestMCPStdio runs `serve -mcp stdio` as an agent would and calls find_tools through the
// SDK's command transport.
func TestMCPStdio(t *testing.T) {
	bin := buildServe(t)
	dir := newIndex(t)
	cmd := exec.Command(bin, "serve", "-index", dir, "-mcp", "stdio", "-backend", "go")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "v1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	st := openStore(t, newIndex(t), 0)
	defer st.Close()
	checkFindTools(t, t.Context(), cs, st)
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
}
