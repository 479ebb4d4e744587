package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/gateway"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/library/importer"
	"github.com/toolret/toolret/serve"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
	"github.com/toolret/toolret/toolindex/store/pgstore"
)

// fakeEnv, set in a child's environment, makes the test binary the stdio MCP server
// "fake" (fakeServer) instead of running the tests.
const fakeEnv = "TOOLRET_GATEWAY_FAKE_MCP"

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) != "" {
		s := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
		fakeTools(s, true)
		s.Run(context.Background(), &mcp.StdioTransport{})
		return
	}
	if cfg := os.Getenv(serveEnv); cfg != "" {
		os.Exit(serveChild(cfg))
	}
	code := m.Run()
	if modelDir.dir != "" {
		os.RemoveAll(modelDir.dir)
	}
	os.Exit(code)
}

type echoIn struct {
	Message string `json:"message" jsonschema:"the text to echo back"`
	Loud    bool   `json:"loud,omitempty" jsonschema:"echo it in capitals"` // after message: not alphabetical
}

type addIn struct {
	A float64 `json:"a" jsonschema:"first addend"`
	B float64 `json:"b" jsonschema:"second addend"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

type none struct{}

// fakeTools adds the fake upstream's tools to s: echo and add answer; with faults, crash
// exits the process, hang never answers, garble writes a line that is not JSON-RPC to
// standard output, grow adds a tool (the server then notifies tools/list_changed).
func fakeTools(s *mcp.Server, faults bool) {
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo a message back to the caller, unchanged."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			if in.Loud {
				in.Message = strings.ToUpper(in.Message)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Message}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers and return their sum."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	if !faults {
		return
	}
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Crash the server process."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answer."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			select {}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "garble", Description: "Write malformed JSON-RPC."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			os.Stdout.Write([]byte("{this is not json-rpc\n"))
			select {}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Add the tool weather_forecast to this server."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "weather_forecast", Description: "Forecast the weather of a city for the next days."},
				func(context.Context, *mcp.CallToolRequest, struct {
					City string `json:"city"`
				}) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny"}}}, nil, nil
				})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown"}}}, nil, nil
		})
}

// modelDir is a tiny random bi-encoder in HuggingFace layout (a stand-in for a pre-trained
// model), written once.
var modelDir struct {
	once sync.Once
	dir  string
	err  error
}

func stubModel(t testing.TB) string {
	t.Helper()
	modelDir.once.Do(func() {
		be, err := backend.Open("go")
		if err != nil {
			modelDir.err = err
			return
		}
		if modelDir.dir, modelDir.err = os.MkdirTemp("", "toolret-gateway-model-"); modelDir.err != nil {
			return
		}
		modelDir.err = exporttest.WriteHF(filepath.Join(modelDir.dir, "hf"), exporttest.Options{}, be, 1)
	})
	if modelDir.err != nil {
		t.Fatal(modelDir.err)
	}
	return filepath.Join(modelDir.dir, "hf")
}

const petsSecret = "pets-secret-value-4711"

const petsSpec = `{"openapi": "3.0.3", "info": {"title": "Pets", "version": "1"},
 "servers": [{"url": "https://pets.example.invalid/v1"}],
 "paths": {
  "/pets/{petId}": {"get": {"operationId": "getPet", "summary": "Get a pet by its id",
    "parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "integer"}},
                   {"name": "verbose", "in": "query", "schema": {"type": "boolean"}}],
    "responses": {"200": {"description": "the pet"}}}},
  "/pets": {"post": {"operationId": "createPet", "summary": "Create a pet",
    "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["name"],
      "properties": {"name": {"type": "string"}, "species": {"type": "string"}}}}}},
    "responses": {"201": {"description": "created"}}}},
  "/status/fail": {"get": {"operationId": "failing", "summary": "Always fails", "responses": {"200": {"description": "ok"}}}},
  "/status/slow": {"get": {"operationId": "slow", "summary": "Never answers", "responses": {"200": {"description": "ok"}}}},
  "/status/leak": {"get": {"operationId": "leak", "summary": "Answers an error quoting its credentials", "responses": {"200": {"description": "ok"}}}}
 }}`

// petsHandler is the OpenAPI upstream of petsSpec under /v1; it needs the X-Api-Key
// header.
func petsHandler(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Api-Key") != petsSecret {
		http.Error(w, `{"error": "bad api key"}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/v1/pets/"):
		fmt.Fprintf(w, `{"id": %q, "name": "Rex", "verbose": %q}`, strings.TrimPrefix(r.URL.Path, "/v1/pets/"), r.URL.Query().Get("verbose"))
	case r.Method == "POST" && r.URL.Path == "/v1/pets":
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id": 7, "created": %s, "content_type": %q}`, b, r.Header.Get("Content-Type"))
	case r.URL.Path == "/v1/status/fail":
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error": "upstream down for maintenance"}`)
	case r.URL.Path == "/v1/status/slow":
		<-r.Context().Done()
	case r.URL.Path == "/v1/status/leak":
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, `{"error": "key %s is not allowed here"}`, r.Header.Get("X-Api-Key"))
	default:
		http.NotFound(w, r)
	}
}

// faultyMCP serves MCP server s over streamable HTTP, answering every tools/call with
// status (a 5xx) or, when status is 0, with a body that is not JSON.
func faultyMCP(s *mcp.Server, status int) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if r.Method == "POST" && bytes.Contains(b, []byte(`"tools/call"`)) {
			if status != 0 {
				http.Error(w, "internal failure", status)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc": "2.0", "id": 2, "result": {"content": [ broken`))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// syncBuffer is a log destination safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fixture is a gateway served over HTTP (REST and MCP at /mcp) over a library imported from
// its upstreams: the stdio server "fake" (this test binary), the HTTP MCP servers "remote",
// "flaky" (5xx on calls) and "badjson" (malformed answers to calls), and the OpenAPI
// upstream "pets" (its twin "petsprivate" lacks allow_private).
type fixture struct {
	dir, libPath, upPath, state string
	store                       *store.Store
	gw                          *gateway.Gateway
	remote                      *mcp.Server // upstream "remote", in this process
	srv                         *httptest.Server
	logs                        *syncBuffer
}

type fixtureOpts struct {
	keys        *serve.Keys
	rate        float64
	burst       int
	callTimeout string
	// database, when set, is the PostgreSQL URL the library and the usage log are shared
	// through (store.OpenShared, Options.UsageDB).
	database string
}

func writeFile(t testing.TB, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeUpstreams writes the upstream configuration and the secrets file into dir and starts
// the HTTP upstreams.
func writeUpstreams(t testing.TB, dir, callTimeout string) string {
	t.Helper()
	p, _ := writeUpstreamsRemote(t, dir, callTimeout)
	return p
}

// writeUpstreamsRemote is writeUpstreams, also returning the in-process MCP server of
// upstream "remote" (its tools can be changed: it then notifies tools/list_changed).
func writeUpstreamsRemote(t testing.TB, dir, callTimeout string) (string, *mcp.Server) {
	t.Helper()
	pets := httptest.NewServer(http.HandlerFunc(petsHandler))
	t.Cleanup(pets.Close)
	remoteSrv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	fakeTools(remoteSrv, false)
	remote := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remoteSrv }, nil))
	t.Cleanup(remote.Close)
	flaky := httptest.NewServer(faultyMCP(remoteSrv, http.StatusBadGateway))
	t.Cleanup(flaky.Close)
	badjson := httptest.NewServer(faultyMCP(remoteSrv, 0))
	t.Cleanup(badjson.Close)
	writeFile(t, filepath.Join(dir, "secrets.env"), "PETS_KEY="+petsSecret+"\n")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if callTimeout == "" {
		callTimeout = "3s"
	}
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"fake":    map[string]any{"command": self, "env": map[string]string{fakeEnv: "1"}},
			"remote":  map[string]any{"url": remote.URL},
			"flaky":   map[string]any{"url": flaky.URL},
			"badjson": map[string]any{"url": badjson.URL},
		},
		"openapi": map[string]any{
			"pets":        map[string]any{"base_url": pets.URL + "/v1", "headers": map[string]string{"X-Api-Key": "${PETS_KEY}"}, "allow_private": true},
			"petsprivate": map[string]any{"base_url": pets.URL + "/v1", "headers": map[string]string{"X-Api-Key": "${PETS_KEY}"}},
		},
		"secrets":      "secrets.env",
		"call_timeout": callTimeout,
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	p := filepath.Join(dir, "upstreams.json")
	writeFile(t, p, string(b))
	return p, remoteSrv
}

// importLibrary imports the upstreams' tools into dir/tools.jsonl.
func importLibrary(t testing.TB, dir, upPath string) string {
	t.Helper()
	spec := filepath.Join(dir, "pets.json")
	writeFile(t, spec, petsSpec)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lib, _, err := importer.Import(ctx, importer.Sources{MCP: []string{upPath}, OpenAPI: []string{"pets=" + spec, "petsprivate=" + spec}})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "tools.jsonl")
	if err := library.Write(p, lib); err != nil {
		t.Fatal(err)
	}
	return p
}

func newFixture(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), logs: &syncBuffer{}}
	f.upPath, f.remote = writeUpstreamsRemote(t, f.dir, o.callTimeout)
	f.libPath = importLibrary(t, f.dir, f.upPath)
	f.state = gateway.StateDir(f.libPath)
	lib, err := library.Read(f.libPath)
	if err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	idx, _, err := gateway.BuildIndex(ctx, lib, f.libPath, stubModel(t), f.state, be)
	if err != nil {
		t.Fatal(err)
	}
	var usageDB gateway.UsageDB
	var libraryDB gateway.LibraryDB
	var spool string
	if o.database != "" {
		pg, err := pgstore.Open(ctx, o.database, pgstore.Options{Name: f.dir, Poll: 500 * time.Millisecond, Log: slog.New(slog.NewJSONHandler(f.logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if f.store, err = store.OpenShared(idx, pg, toolindex.WithBackend(be)); err != nil {
			t.Fatal(err)
		}
		usageDB, libraryDB, spool = pg, pg, filepath.Join(f.state, gateway.UsageSpoolFile)
	} else if f.store, err = store.Open(idx, 0, toolindex.WithBackend(be)); err != nil {
		t.Fatal(err)
	}
	up, err := gateway.ReadUpstreams(f.upPath)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.gw, err = gateway.New(gateway.Options{Library: lib, LibraryPath: f.libPath, Store: f.store, Upstreams: up,
		UsageLog: filepath.Join(f.state, gateway.UsageFile), UsageDB: usageDB, UsageSpool: spool, LibraryDB: libraryDB, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := f.gw.SyncIndex(); err != nil {
		t.Fatal(err)
	}
	f.gw.Start(ctx)
	f.srv = httptest.NewServer(serve.New(f.store, serve.Config{MCP: true, Extension: f.gw, Keys: o.keys, Rate: o.rate, Burst: o.burst, Logger: log}).Handler())
	t.Cleanup(func() {
		f.srv.Close()
		f.gw.Close()
		f.store.Close()
		if strings.Contains(f.logs.String(), petsSecret) {
			t.Errorf("the log holds the secret")
		}
	})
	return f
}

// do sends a JSON request with an optional bearer key and decodes the answer into out; it
// returns the status and the body (an error answer's message).
func (f *fixture) do(t testing.TB, method, path, key string, body any, out any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, f.srv.URL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	var e struct{ Error string }
	if resp.StatusCode != 200 && json.Unmarshal(b, &e) == nil && e.Error != "" {
		return resp.StatusCode, e.Error
	}
	return resp.StatusCode, string(b)
}

// mcpClient connects a Go MCP client to the fixture's /mcp with an optional bearer key.
func (f *fixture) mcpClient(t testing.TB, key string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearerTransport{key, http.DefaultTransport}}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.srv.URL + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type bearerTransport struct {
	key  string
	next http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.key != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return b.next.RoundTrip(r)
}

// callText calls call_tool over MCP and returns the result's text and isError.
func callText(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": name, "arguments": args}})
	if err != nil {
		t.Fatalf("call_tool %s: %v", name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n"), res.IsError
}
