// Package llm is a client for OpenAI-compatible chat completions: POST {URL}/chat/completions
// as OpenAI, vLLM, llama.cpp's llama-server and Ollama's /v1 serve it. It always asks for
// temperature 0, sends the API key (from TOOLRET_LLM_API_KEY, see FromEnv) as
// "Authorization: Bearer", and:
//
//   - limits the requests in flight (Config.Concurrency, a semaphore held only while a request
//     is on the wire, not while waiting to retry);
//   - gives each request its own timeout (Config.Timeout);
//   - retries 429, 5xx, timeouts, connection errors and unreadable 200 responses, with
//     exponential backoff (Config.Backoff, doubling, capped by Config.MaxBackoff) or the
//     server's Retry-After (seconds or an HTTP date; up to 10 minutes) when it sends one;
//   - asks for a JSON object (response_format {"type": "json_object"}) when Options.JSON is
//     set, and asks again without it when the server rejects it with 400 (and, once that
//     worked, never sends it again);
//   - caches every successful reply on disk (Config.Cache): one file per entry, named by the
//     sha256 of the model, the messages and the options, written atomically (temporary file,
//     fsync, rename), so a re-run or a resumed run sends no request for what it has already
//     been answered. Concurrent calls with the same key share one request.
//
// The key is never logged, never part of an error string (a server echoing it back has it
// replaced by "[redacted]") and never written to the cache: entries hold the model, the
// messages, the options and the reply.
package llm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolret/toolret/internal/atomicfile"
)

// KeyEnv is the environment variable holding the API key.
const KeyEnv = "TOOLRET_LLM_API_KEY"

// FromEnv returns the API key in KeyEnv ("" when unset: no Authorization header is sent,
// as local servers need none).
func FromEnv() string { return os.Getenv(KeyEnv) }

// Message is one chat message: role "system", "user" or "assistant".
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Options are the per-call request options. They are part of the cache key.
type Options struct {
	// JSON asks for a JSON object reply (response_format {"type": "json_object"}).
	JSON bool `json:"json,omitempty"`
	// MaxTokens caps the reply's length (0: the server's default).
	MaxTokens int `json:"max_tokens,omitempty"`
}

// Config configures a Client. Zero durations take the defaults named on each field.
type Config struct {
	// URL is the API base, e.g. http://127.0.0.1:8080/v1 (llama-server) or
	// http://127.0.0.1:11434/v1 (Ollama); requests go to URL + "/chat/completions".
	URL string
	// Model is the "model" of every request.
	Model string
	// Key is sent as "Authorization: Bearer Key" when not empty (FromEnv reads it).
	Key string
	// Timeout bounds each request, from sending it to reading the whole reply (default 2m).
	Timeout time.Duration
	// Retries is how many times a failed request is retried after the first attempt (0: never).
	Retries int
	// Backoff is the wait before the first retry, doubled at each further one (default 1s),
	// capped by MaxBackoff (default 1m). A Retry-After header replaces it.
	Backoff, MaxBackoff time.Duration
	// Concurrency is the number of requests in flight at once (default 1).
	Concurrency int
	// Cache is the directory of the reply cache ("": no cache).
	Cache string
	// HTTP is the HTTP client (default: a new client without a global timeout).
	HTTP *http.Client
}

// Reply is a chat completion's answer.
type Reply struct {
	// Content is the first choice's message content.
	Content string
	// Cached reports that the reply came from the cache (or from a concurrent identical call).
	Cached bool
}

// Stats counts what a Client did.
type Stats struct {
	// Requests is the number of HTTP requests sent (every attempt counts).
	Requests int64
	// CacheHits is the number of calls answered from the cache.
	CacheHits int64
	// Retries is the number of retried requests (after 429, 5xx, timeouts, ...).
	Retries int64
	// JSONFallbacks is the number of calls asked again without response_format after a 400.
	JSONFallbacks int64
}

// StatusError is a non-2xx HTTP response.
type StatusError struct {
	Code int
	// Body is the start of the response body (at most 512 bytes), the key redacted.
	Body string
	// RetryAfter is the server's Retry-After, or 0.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.Code, http.StatusText(e.Code), e.Body)
}

// Retryable reports whether the status is worth retrying: 408, 429 and 5xx.
func (e *StatusError) Retryable() bool {
	return e.Code == http.StatusTooManyRequests || e.Code == http.StatusRequestTimeout || e.Code >= 500
}

// errTimeout is a request that ran out of Config.Timeout.
var errTimeout = errors.New("request timed out")

// transient marks a failure worth retrying (timeouts, connection errors, unreadable replies).
type transient struct{ err error }

func (t transient) Error() string { return t.err.Error() }
func (t transient) Unwrap() error { return t.err }

// Client sends chat completion requests. It is safe for concurrent use.
type Client struct {
	cfg      Config
	endpoint string
	sem      chan struct{}
	noJSON   atomic.Bool

	requests, hits, retries, fallbacks atomic.Int64

	mu       sync.Mutex
	inflight map[string]*call
}

type call struct {
	done  chan struct{}
	reply Reply
	err   error
}

// New returns a Client for cfg. It checks the configuration; it sends nothing.
func New(cfg Config) (*Client, error) {
	u := strings.TrimRight(strings.TrimSpace(cfg.URL), "/")
	if u == "" {
		return nil, errors.New("llm: no URL")
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return nil, fmt.Errorf("llm: URL %q: want http:// or https://", cfg.URL)
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("llm: no model")
	}
	if cfg.Retries < 0 {
		return nil, fmt.Errorf("llm: retries %d: must be >= 0", cfg.Retries)
	}
	if cfg.Timeout < 0 || cfg.Backoff < 0 || cfg.MaxBackoff < 0 || cfg.Concurrency < 0 {
		return nil, errors.New("llm: negative timeout, backoff or concurrency")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = time.Second
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = time.Minute
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 1
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{}
	}
	return &Client{cfg: cfg, endpoint: u + "/chat/completions", sem: make(chan struct{}, cfg.Concurrency), inflight: map[string]*call{}}, nil
}

// Concurrency returns the number of requests the client keeps in flight at most.
func (c *Client) Concurrency() int { return c.cfg.Concurrency }

// Model returns the configured model.
func (c *Client) Model() string { return c.cfg.Model }

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{Requests: c.requests.Load(), CacheHits: c.hits.Load(), Retries: c.retries.Load(), JSONFallbacks: c.fallbacks.Load()}
}

// Key returns the cache key of a call: the hex sha256 of the model, the messages and the
// options (and the fixed temperature 0) as JSON.
func (c *Client) Key(msgs []Message, opt Options) string {
	b, _ := json.Marshal(struct {
		Model       string    `json:"model"`
		Messages    []Message `json:"messages"`
		Options     Options   `json:"options"`
		Temperature float64   `json:"temperature"`
	}{c.cfg.Model, msgs, opt, 0})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Chat returns the model's reply to msgs: from the cache when it holds it, else from the
// server (retrying as the package doc says), caching it.
func (c *Client) Chat(ctx context.Context, msgs []Message, opt Options) (Reply, error) {
	if len(msgs) == 0 {
		return Reply{}, errors.New("llm: no messages")
	}
	key := c.Key(msgs, opt)
	if r, ok := c.load(key, msgs, opt); ok {
		c.hits.Add(1)
		return r, nil
	}
	c.mu.Lock()
	if cl, ok := c.inflight[key]; ok {
		c.mu.Unlock()
		select {
		case <-cl.done:
		case <-ctx.Done():
			return Reply{}, ctx.Err()
		}
		if cl.err != nil {
			return Reply{}, cl.err
		}
		c.hits.Add(1)
		return Reply{Content: cl.reply.Content, Cached: true}, nil
	}
	cl := &call{done: make(chan struct{})}
	c.inflight[key] = cl
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.inflight, key)
		c.mu.Unlock()
		close(cl.done)
	}()
	content, err := c.send(ctx, msgs, opt)
	if err == nil {
		err = c.store(key, msgs, opt, content)
	}
	if err != nil {
		cl.err = c.redact(err)
		return Reply{}, cl.err
	}
	cl.reply = Reply{Content: content}
	return cl.reply, nil
}

// entry is a cache file.
type entry struct {
	Key      string    `json:"key"`
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Options  Options   `json:"options"`
	Content  string    `json:"content"`
}

func (c *Client) path(key string) string { return filepath.Join(c.cfg.Cache, key[:2], key+".json") }

// load returns the cached reply of key, when the cache has an entry for exactly this call
// (an unreadable or foreign entry is a miss, overwritten by the next store).
func (c *Client) load(key string, msgs []Message, opt Options) (Reply, bool) {
	if c.cfg.Cache == "" {
		return Reply{}, false
	}
	b, err := os.ReadFile(c.path(key))
	if err != nil {
		return Reply{}, false
	}
	var e entry
	if json.Unmarshal(b, &e) != nil || e.Key != key || e.Model != c.cfg.Model || e.Options != opt || len(e.Messages) != len(msgs) {
		return Reply{}, false
	}
	for i := range msgs {
		if e.Messages[i] != msgs[i] {
			return Reply{}, false
		}
	}
	return Reply{Content: e.Content, Cached: true}, true
}

func (c *Client) store(key string, msgs []Message, opt Options, content string) error {
	if c.cfg.Cache == "" {
		return nil
	}
	b, err := json.MarshalIndent(entry{Key: key, Model: c.cfg.Model, Messages: msgs, Options: opt, Content: content}, "", " ")
	if err != nil {
		return fmt.Errorf("llm cache: %w", err)
	}
	if err := atomicfile.Write(c.path(key), append(b, '\n')); err != nil {
		return fmt.Errorf("llm cache: %w", err)
	}
	return nil
}

// send asks the server, retrying as the package doc says.
func (c *Client) send(ctx context.Context, msgs []Message, opt Options) (string, error) {
	useJSON := opt.JSON && !c.noJSON.Load()
	fellBack := false
	for attempt := 0; ; {
		content, err := c.once(ctx, msgs, opt.MaxTokens, useJSON)
		if err == nil {
			if fellBack {
				c.noJSON.Store(true)
				c.fallbacks.Add(1)
			}
			return content, nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("llm %s: %w", c.endpoint, ctx.Err())
		}
		var se *StatusError
		isStatus := errors.As(err, &se)
		if isStatus && se.Code == http.StatusBadRequest && useJSON {
			// The server may not know response_format: ask again without it.
			useJSON, fellBack = false, true
			continue
		}
		if isStatus && !se.Retryable() || !isStatus && !errors.As(err, new(transient)) {
			return "", fmt.Errorf("llm %s: %w", c.endpoint, err)
		}
		if attempt >= c.cfg.Retries {
			return "", fmt.Errorf("llm %s: %d attempts: %w", c.endpoint, attempt+1, err)
		}
		wait := c.backoff(attempt)
		if isStatus && se.RetryAfter > 0 {
			wait = se.RetryAfter
		}
		attempt++
		c.retries.Add(1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("llm %s: waiting to retry: %w", c.endpoint, ctx.Err())
		}
	}
}

// backoff returns the wait before retry attempt+1: Backoff·2^attempt, capped by MaxBackoff,
// less up to a quarter at random so that concurrent callers spread out.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.Backoff
	for i := 0; i < attempt && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.cfg.MaxBackoff)
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

// maxRetryAfter caps a server's Retry-After.
const maxRetryAfter = 10 * time.Minute

// maxBody caps a response body.
const maxBody = 32 << 20

type request struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	Temperature    float64         `json:"temperature"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
	Stream         bool            `json:"stream"`
}

type responseFormat struct {
	Type string `json:"type"`
}

type response struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// once sends one request, holding a concurrency slot while it is on the wire.
func (c *Client) once(ctx context.Context, msgs []Message, maxTokens int, useJSON bool) (string, error) {
	req := request{Model: c.cfg.Model, Messages: msgs, MaxTokens: maxTokens}
	if useJSON {
		req.ResponseFormat = &responseFormat{Type: "json_object"}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-c.sem }()
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(rctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	if c.cfg.Key != "" {
		hr.Header.Set("Authorization", "Bearer "+c.cfg.Key)
	}
	c.requests.Add(1)
	resp, err := c.cfg.HTTP.Do(hr)
	if err != nil {
		return "", c.wireError(ctx, rctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return "", c.wireError(ctx, rctx, err)
	}
	if resp.StatusCode/100 != 2 {
		snippet := strings.TrimSpace(string(b[:min(len(b), 512)]))
		return "", &StatusError{Code: resp.StatusCode, Body: c.redactString(snippet), RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	var r response
	if err := json.Unmarshal(b, &r); err != nil {
		return "", transient{fmt.Errorf("unreadable response (HTTP %d, %d bytes): %w", resp.StatusCode, len(b), err)}
	}
	if len(r.Choices) == 0 {
		return "", transient{fmt.Errorf("response without choices (HTTP %d): %s", resp.StatusCode, c.redactString(string(b[:min(len(b), 200)])))}
	}
	if r.Choices[0].Message.Content == nil {
		return "", nil
	}
	return *r.Choices[0].Message.Content, nil
}

// wireError classifies a failure to send or read: the caller's cancellation is returned as
// is; a timeout of this request and a connection error are transient.
func (c *Client) wireError(ctx, rctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return transient{fmt.Errorf("%w after %s", errTimeout, c.cfg.Timeout)}
	}
	return transient{err}
}

// retryAfter parses a Retry-After value (delay in seconds or an HTTP date), capped by
// maxRetryAfter; 0 when absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		d = time.Duration(s * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return max(0, min(d, maxRetryAfter))
}

func (c *Client) redactString(s string) string {
	if c.cfg.Key == "" {
		return s
	}
	return strings.ReplaceAll(s, c.cfg.Key, "[redacted]")
}

// redact makes sure no error leaving the client carries the key in its text.
func (c *Client) redact(err error) error {
	if err == nil || c.cfg.Key == "" || !strings.Contains(err.Error(), c.cfg.Key) {
		return err
	}
	return errors.New(c.redactString(err.Error()))
}
