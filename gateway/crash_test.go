package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/gateway"
	"github.com/toolret/toolret/library"
)

// serveEnv, set in a child's environment to a JSON toolret.ServeConfig, makes the test
// binary run toolret.Serve with it until SIGTERM (serveChild): a server process the test
// can kill -9.
const serveEnv = "TOOLRET_GATEWAY_SERVE"

func serveChild(cfgJSON string) int {
	cfg := toolret.DefaultServeConfig()
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg.Log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := toolret.Serve(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type child struct {
	cmd  *exec.Cmd
	base string
	logs *syncBuffer
}

func startChild(t *testing.T, cfg toolret.ServeConfig) *child {
	t.Helper()
	b, _ := json.Marshal(cfg)
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^$"), base: "http://" + cfg.Addr, logs: &syncBuffer{}}
	c.cmd.Env = append(os.Environ(), serveEnv+"="+string(b))
	c.cmd.Stderr = c.logs
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(c.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not start:\n%s", c.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *child) post(t *testing.T, path string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(c.base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (c *child) status(t *testing.T, path string) int {
	t.Helper()
	resp, err := http.Get(c.base + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestKill9: after kill -9 of a gateway that has answered searches and calls and taken a
// tool an upstream added, nothing acknowledged is lost: every search and call is in the
// usage log, the new tool in the library file; a restart serves it from the replayed index.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dir := t.TempDir()
	upPath := writeUpstreams(t, dir, "5s")
	libPath := importLibrary(t, dir, upPath)
	cfg := toolret.DefaultServeConfig()
	cfg.Library, cfg.Pretrained, cfg.Upstreams, cfg.Addr, cfg.MCP = libPath, stubModel(t), upPath, freeAddr(t), "http"
	c := startChild(t, cfg)
	const n = 10
	for i := range n {
		if s, out := c.post(t, "/v1/search", map[string]any{"query": fmt.Sprintf("echo message %d", i), "k": 3}); s != 200 {
			t.Fatalf("search: %d %v", s, out)
		}
		if s, out := c.post(t, "/v1/call", map[string]any{"name": "fake.echo", "arguments": map[string]any{"message": fmt.Sprint(i)}}); s != 200 || out["text"] != fmt.Sprintf("echo: %d", i) {
			t.Fatalf("call: %d %v", s, out)
		}
	}
	if s, out := c.post(t, "/v1/call", map[string]any{"name": "fake.grow"}); s != 200 || out["text"] != "grown" {
		t.Fatalf("grow: %d %v", s, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for c.status(t, "/v1/tools/fake.weather_forecast") != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("the added tool did not arrive:\n%s", c.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The crash: no shutdown, no compaction.
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.cmd.Wait()

	kinds := map[string]int{}
	f, err := os.Open(filepath.Join(gateway.StateDir(libPath), gateway.UsageFile))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r gateway.UsageRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("usage log line %q: %v", sc.Text(), err)
		}
		kinds[r.Kind+":"+r.Outcome]++
	}
	f.Close()
	if kinds["search:"] != n || kinds["call:ok"] != n+1 {
		t.Fatalf("usage log after kill -9: %v, want %d searches and %d calls", kinds, n, n+1)
	}
	lib, err := library.Read(libPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lib.Index()["fake.weather_forecast"]; !ok {
		t.Fatal("the library file lost the added tool")
	}
	// The restart replays the index's update log: the tool is served, searches work.
	c = startChild(t, cfg)
	if s := c.status(t, "/v1/tools/fake.weather_forecast"); s != 200 {
		t.Fatalf("after restart: GET the added tool: %d\n%s", s, c.logs.String())
	}
	if s, out := c.post(t, "/v1/search", map[string]any{"query": "weather", "k": 3}); s != 200 {
		t.Fatalf("search after restart: %d %v", s, out)
	}
	if !strings.Contains(c.logs.String(), `"built":false`) {
		t.Errorf("the restart rebuilt the index:\n%s", c.logs.String())
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("graceful stop: %v\n%s", err, c.logs.String())
	}
}
