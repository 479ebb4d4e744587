package serve

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestGate walks a gate through a server's life: starting (no handler, then a handler not
// yet warmed up), ready, failing a check, draining. /livez is 200 throughout; /readyz is 200
// only when ready; other requests are refused with a 503 and Retry-After until ready, and
// answered while draining.
func TestGate(t *testing.T) {
	g := NewGate("loading the index")
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	get := func(method, path string) (int, map[string]any, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(`{"query": "weather"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: %v in %q", method, path, err, b)
		}
		return resp.StatusCode, m, resp.Header
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"answered": r.URL.Path})
	})
	var failing error
	type want struct {
		ready  int
		status string
		reason string
		api    int
	}
	for _, step := range []struct {
		name string
		do   func()
		want want
	}{
		{"starting", func() {}, want{503, "starting", "starting: loading the index", 503}},
		{"handler set, warming up", func() { g.SetHandler(api, time.Second); g.Stage("warming up the model") },
			want{503, "starting", "starting: warming up the model", 503}},
		{"ready", func() { g.Ready(map[string]any{"warmup": "done"}, func() error { return failing }) }, want{200, "ready", "", 200}},
		{"a check fails", func() { failing = errors.New("tool updates disabled: disk full") }, want{503, "failing", "tool updates disabled: disk full", 200}},
		{"the check passes again", func() { failing = nil }, want{200, "ready", "", 200}},
		{"draining", g.Drain, want{503, "draining", "draining: shutting down", 200}},
		{"Ready after Drain stays draining", func() { g.Ready(nil) }, want{503, "draining", "draining: shutting down", 200}},
	} {
		step.do()
		if s, m, _ := get("GET", "/livez"); s != 200 || m["status"] != "alive" {
			t.Fatalf("%s: /livez %d %v", step.name, s, m)
		}
		s, m, h := get("GET", "/readyz")
		if s != step.want.ready || m["status"] != step.want.status || (step.want.reason != "" && m["reason"] != step.want.reason) {
			t.Fatalf("%s: /readyz %d %v, want %+v", step.name, s, m, step.want)
		}
		if s == 503 && h.Get("Retry-After") == "" {
			t.Fatalf("%s: /readyz 503 without Retry-After", step.name)
		}
		if s == 200 && m["warmup"] != "done" {
			t.Fatalf("%s: /readyz %v lacks the info given to Ready", step.name, m)
		}
		s, m, h = get("POST", "/v1/retrieve")
		if s != step.want.api {
			t.Fatalf("%s: POST /v1/retrieve %d %v, want %d", step.name, s, m, step.want.api)
		}
		if s == 503 && (h.Get("Retry-After") == "" || !strings.Contains(m["error"].(string), "retry when GET /readyz answers 200")) {
			t.Fatalf("%s: refused request %v %v: want Retry-After and an error saying to wait for /readyz", step.name, h, m)
		}
		if s == 200 && m["answered"] != "/v1/retrieve" {
			t.Fatalf("%s: %v", step.name, m)
		}
	}
}
