package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testKey = "sk-test-0123456789-SECRET"

// reply writes a chat completion whose first choice says content.
func reply(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "x", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
	})
}

// decode reads a chat completion request.
func decode(t *testing.T, r *http.Request) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		t.Errorf("request body: %v", err)
	}
	return m
}

func newClient(t *testing.T, url string, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{URL: url + "/v1", Model: "tiny-instruct", Key: testKey, Timeout: 2 * time.Second, Retries: 3,
		Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Concurrency: 2}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var hello = []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello"}}

// TestRequest checks the wire format: path, method, bearer key, model, temperature 0, the
// messages, response_format only with Options.JSON, max_tokens only when set.
func TestRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
		key  string
	}{
		{"plain", Options{}, testKey},
		{"json", Options{JSON: true}, testKey},
		{"max-tokens", Options{MaxTokens: 64}, testKey},
		{"no-key", Options{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got map[string]any
			var auth, path, method string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				path, method, auth = r.URL.Path, r.Method, r.Header.Get("Authorization")
				got = decode(t, r)
				reply(w, "hi")
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, func(c *Config) { c.Key = tc.key })
			r, err := c.Chat(context.Background(), hello, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if r.Content != "hi" || r.Cached {
				t.Errorf("reply %+v", r)
			}
			if path != "/v1/chat/completions" || method != http.MethodPost {
				t.Errorf("%s %s", method, path)
			}
			wantAuth := ""
			if tc.key != "" {
				wantAuth = "Bearer " + tc.key
			}
			if auth != wantAuth {
				t.Errorf("Authorization %q, want %q", auth, wantAuth)
			}
			if got["model"] != "tiny-instruct" || got["temperature"] != 0.0 || got["stream"] != false {
				t.Errorf("request %v", got)
			}
			msgs, _ := got["messages"].([]any)
			if len(msgs) != 2 || msgs[1].(map[string]any)["role"] != "user" || msgs[1].(map[string]any)["content"] != "hello" {
				t.Errorf("messages %v", got["messages"])
			}
			rf, hasRF := got["response_format"]
			if hasRF != tc.opt.JSON {
				t.Errorf("response_format %v present %v, want %v", rf, hasRF, tc.opt.JSON)
			}
			if hasRF && rf.(map[string]any)["type"] != "json_object" {
				t.Errorf("response_format %v", rf)
			}
			if mt, ok := got["max_tokens"]; ok != (tc.opt.MaxTokens > 0) || ok && mt != float64(tc.opt.MaxTokens) {
				t.Errorf("max_tokens %v (%v)", mt, ok)
			}
		})
	}
}

// TestRetries drives the retry policy with a server that fails the first attempts.
func TestRetries(t *testing.T) {
	type resp struct {
		code       int
		retryAfter string
		sleep      time.Duration // before answering (beyond the client's timeout: a timeout)
		body       string
	}
	for _, tc := range []struct {
		name     string
		script   []resp // one per attempt; the attempts after it succeed
		timeout  time.Duration
		retries  int
		attempts int64
		minWait  time.Duration // the retry honoured at least this wait
		err      string        // expected error text; "" for success
	}{
		{name: "429 then success with Retry-After", script: []resp{{code: 429, retryAfter: "1"}}, retries: 3, attempts: 2, minWait: 900 * time.Millisecond},
		{name: "503 then success", script: []resp{{code: 503}, {code: 502}}, retries: 3, attempts: 3},
		{name: "timeout then success", script: []resp{{sleep: 3 * time.Second}}, timeout: 300 * time.Millisecond, retries: 3, attempts: 2},
		{name: "unreadable 200 then success", script: []resp{{code: 200, body: "{not json"}}, retries: 3, attempts: 2},
		{name: "400 is not retried", script: []resp{{code: 400, body: `{"error": "bad"}`}}, retries: 3, attempts: 1, err: "HTTP 400"},
		{name: "401 is not retried and never shows the key", script: []resp{{code: 401, body: "invalid key Bearer " + testKey}}, retries: 3, attempts: 1, err: "HTTP 401"},
		{name: "retries exhausted", script: []resp{{code: 500}, {code: 500}, {code: 500}}, retries: 2, attempts: 3, err: "3 attempts: HTTP 500"},
		{name: "no retries", script: []resp{{code: 429}}, retries: 0, attempts: 1, err: "HTTP 429"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				io.Copy(io.Discard, r.Body)
				if i >= len(tc.script) {
					reply(w, "ok")
					return
				}
				s := tc.script[i]
				if s.sleep > 0 {
					select {
					case <-time.After(s.sleep):
					case <-r.Context().Done():
						return
					}
					reply(w, "late")
					return
				}
				if s.retryAfter != "" {
					w.Header().Set("Retry-After", s.retryAfter)
				}
				w.WriteHeader(s.code)
				io.WriteString(w, s.body)
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, func(c *Config) {
				c.Retries = tc.retries
				if tc.timeout > 0 {
					c.Timeout = tc.timeout
				}
			})
			start := time.Now()
			r, err := c.Chat(context.Background(), hello, Options{})
			took := time.Since(start)
			if n.Load() != tc.attempts {
				t.Errorf("server saw %d requests, want %d", n.Load(), tc.attempts)
			}
			if st := c.Stats(); st.Requests != tc.attempts || st.Retries != tc.attempts-1 {
				t.Errorf("stats %+v, want %d requests", st, tc.attempts)
			}
			if tc.err == "" {
				if err != nil || r.Content != "ok" {
					t.Fatalf("reply %+v, err %v", r, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), testKey) {
				t.Errorf("error shows the key: %v", err)
			}
			if took < tc.minWait {
				t.Errorf("took %s: Retry-After not honoured (want >= %s)", took, tc.minWait)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0}, {"2", 2 * time.Second}, {"0.5", 500 * time.Millisecond}, {"-1", 0}, {"soon", 0},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"86400", maxRetryAfter},
	} {
		if got := retryAfter(tc.v, now); got != tc.want {
			t.Errorf("retryAfter(%q) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

// TestJSONFallback: a server that rejects response_format with 400 is asked again without it,
// and later calls do not send it; the reply is cached under the call's own options.
func TestJSONFallback(t *testing.T) {
	var withRF, without atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := decode(t, r)
		if _, ok := m["response_format"]; ok {
			withRF.Add(1)
			http.Error(w, `{"error": {"message": "response_format not supported"}}`, http.StatusBadRequest)
			return
		}
		without.Add(1)
		reply(w, `{"a": 1}`)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, func(c *Config) { c.Cache = t.TempDir() })
	for i, msg := range []string{"one", "two"} {
		r, err := c.Chat(context.Background(), []Message{{Role: "user", Content: msg}}, Options{JSON: true})
		if err != nil || r.Content != `{"a": 1}` {
			t.Fatalf("call %d: %+v, %v", i, r, err)
		}
	}
	if withRF.Load() != 1 || without.Load() != 2 || c.Stats().JSONFallbacks != 1 {
		t.Errorf("requests with response_format %d, without %d, fallbacks %d; want 1, 2, 1", withRF.Load(), without.Load(), c.Stats().JSONFallbacks)
	}
	// Served from the cache: nothing more reaches the server.
	if r, err := c.Chat(context.Background(), []Message{{Role: "user", Content: "one"}}, Options{JSON: true}); err != nil || !r.Cached {
		t.Errorf("cached call: %+v, %v", r, err)
	}
	if withRF.Load()+without.Load() != 3 {
		t.Errorf("the cached call reached the server")
	}
}

// TestCache: a second client over the same cache directory sends no request for what the
// first was answered; another model or other options miss; the files hold no key and no
// temporary file is left.
func TestCache(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		m := decode(t, r)
		msgs := m["messages"].([]any)
		reply(w, "echo: "+msgs[len(msgs)-1].(map[string]any)["content"].(string))
	}))
	defer srv.Close()
	dir := t.TempDir()
	calls := [][]Message{hello, {{Role: "user", Content: "a"}}, {{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}, {Role: "user", Content: "c"}}}
	first := newClient(t, srv.URL, func(c *Config) { c.Cache = dir })
	var want []string
	for _, m := range calls {
		r, err := first.Chat(context.Background(), m, Options{})
		if err != nil || r.Cached {
			t.Fatalf("%+v, %v", r, err)
		}
		want = append(want, r.Content)
	}
	if n.Load() != int64(len(calls)) {
		t.Fatalf("first run: %d requests, want %d", n.Load(), len(calls))
	}
	n.Store(0)
	second := newClient(t, srv.URL, func(c *Config) { c.Cache = dir })
	for i, m := range calls {
		r, err := second.Chat(context.Background(), m, Options{})
		if err != nil || !r.Cached || r.Content != want[i] {
			t.Errorf("second run, call %d: %+v, %v; want cached %q", i, r, err, want[i])
		}
	}
	if n.Load() != 0 || second.Stats().Requests != 0 || second.Stats().CacheHits != int64(len(calls)) {
		t.Errorf("second run: server saw %d requests, stats %+v; want 0", n.Load(), second.Stats())
	}
	other := newClient(t, srv.URL, func(c *Config) { c.Cache = dir; c.Model = "other" })
	if r, err := other.Chat(context.Background(), hello, Options{}); err != nil || r.Cached {
		t.Errorf("other model: %+v, %v", r, err)
	}
	if r, err := second.Chat(context.Background(), hello, Options{MaxTokens: 5}); err != nil || r.Cached {
		t.Errorf("other options: %+v, %v", r, err)
	}
	if n.Load() != 2 {
		t.Errorf("misses sent %d requests, want 2", n.Load())
	}
	files := 0
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		files++
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), testKey) {
			t.Errorf("%s holds the API key", p)
		}
		if strings.Contains(e.Name(), ".tmp") || !strings.HasSuffix(e.Name(), ".json") {
			t.Errorf("stray file %s", p)
		}
		return nil
	})
	if files != len(calls)+2 {
		t.Errorf("%d cache files, want %d", files, len(calls)+2)
	}
	// A corrupt entry is a miss, answered again and rewritten.
	p := first.path(first.Key(hello, Options{}))
	if err := os.WriteFile(p, []byte("{torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := second.Chat(context.Background(), hello, Options{}); err != nil || r.Cached {
		t.Errorf("corrupt entry: %+v, %v", r, err)
	}
	if r, err := second.Chat(context.Background(), hello, Options{}); err != nil || !r.Cached {
		t.Errorf("rewritten entry: %+v, %v", r, err)
	}
}

// TestConcurrency: no more requests in flight than Config.Concurrency; identical concurrent
// calls share one request.
func TestConcurrency(t *testing.T) {
	var in, peak, n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		cur := in.Add(1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		time.Sleep(40 * time.Millisecond)
		in.Add(-1)
		io.Copy(io.Discard, r.Body)
		reply(w, "ok")
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, func(c *Config) { c.Concurrency = 2 })
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Chat(context.Background(), []Message{{Role: "user", Content: string(rune('a' + i))}}, Options{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if peak.Load() > 2 || n.Load() != 8 {
		t.Errorf("peak %d requests in flight (limit 2), %d requests (want 8)", peak.Load(), n.Load())
	}
	n.Store(0)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := c.Chat(context.Background(), []Message{{Role: "user", Content: "same"}}, Options{}); err != nil || r.Content != "ok" {
				t.Error(r, err)
			}
		}()
	}
	wg.Wait()
	// The calls may not all overlap; without a cache each one that does not is a request.
	if n.Load() > 4 || n.Load() < 1 {
		t.Errorf("%d requests for 4 identical calls", n.Load())
	}
}

// TestCancel: cancelling the context ends a call waiting to retry at once.
func TestCancel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Chat(ctx, hello, Options{})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("err %v after %s", err, time.Since(start))
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Model: "m"}, "no URL"},
		{Config{URL: "127.0.0.1:8080", Model: "m"}, "want http"},
		{Config{URL: "http://x"}, "no model"},
		{Config{URL: "http://x", Model: "m", Retries: -1}, "retries -1"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
