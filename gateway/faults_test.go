package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret/gateway"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/serve"
)

// TestArguments: arguments that fail a tool's input schema are refused before any upstream
// is called, naming the failing field, over REST (400) and MCP (isError).
func TestArguments(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	cs := f.mcpClient(t, "")
	for _, tc := range []struct {
		name string
		args any
		want string
	}{
		{"fake.echo", map[string]any{}, `argument "message" is required`},
		{"fake.echo", map[string]any{"message": 3}, `argument "message": got number, want string`},
		{"fake.add", map[string]any{"a": "two", "b": 1}, `argument "a": got string, want number`},
		{"pets.getPet", map[string]any{"petId": "x12"}, `argument "petId": got string, want integer`},
		{"pets.createPet", map[string]any{"species": "cat"}, `argument "name" is required`},
		{"fake.echo", []any{1}, "arguments must be a JSON object"},
	} {
		s, b := f.do(t, "POST", "/v1/call", "", map[string]any{"name": tc.name, "arguments": tc.args}, nil)
		if s != 400 || !strings.Contains(b, tc.want) {
			t.Errorf("REST %s %v: %d %s, want %q", tc.name, tc.args, s, b, tc.want)
		}
		if m, ok := tc.args.(map[string]any); ok {
			if text, isErr := callText(t, cs, tc.name, m); !isErr || !strings.Contains(text, tc.want) {
				t.Errorf("MCP %s %v: %q, want %q", tc.name, tc.args, text, tc.want)
			}
		}
	}
	if s, b := f.do(t, "POST", "/v1/call", "", map[string]any{"name": "nope.nothing"}, nil); s != 404 || !strings.Contains(b, `no tool "nope.nothing"`) {
		t.Errorf("unknown tool: %d %s", s, b)
	}
	if s, b := f.do(t, "POST", "/v1/call", "", map[string]any{"name": "fake.echo", "arguments": map[string]any{"message": "x"}, "url": "http://evil"}, nil); s != 400 || !strings.Contains(b, `unknown field "url"`) {
		t.Errorf("a URL in the request: %d %s", s, b)
	}
}

// TestFaults: each fault of an upstream is a tool error saying what happened, and the
// gateway keeps serving (stdio servers restarted).
func TestFaults(t *testing.T) {
	f := newFixture(t, fixtureOpts{callTimeout: "2s"})
	cs := f.mcpClient(t, "")
	for _, tc := range []struct {
		name, want string
		args       map[string]any
	}{
		{"fake.crash", `upstream MCP server "fake" closed the connection during the call`, nil},
		{"fake.hang", `upstream MCP server "fake" did not answer within 2s`, nil},
		{"fake.garble", `upstream MCP server "fake" answered malformed JSON-RPC`, nil},
		{"flaky.echo", `upstream MCP server "flaky" failed: calling "tools/call": rejected by transport: sending "tools/call": Bad Gateway`, map[string]any{"message": "x"}},
		{"badjson.echo", `upstream MCP server "badjson" answered malformed JSON-RPC`, map[string]any{"message": "x"}},
		{"pets.failing", `answered HTTP 503 Service Unavailable: {"error": "upstream down for maintenance"}`, nil},
		{"pets.slow", "did not answer within 2s", nil},
		{"pets.leak", `key [redacted] is not allowed`, nil},
		{"petsprivate.getPet", "private, loopback or link-local address 127.0.0.1 refused", map[string]any{"petId": 1}},
	} {
		start := time.Now()
		text, isErr := callText(t, cs, tc.name, tc.args)
		t.Logf("%-20s %5dms  %s", tc.name, time.Since(start).Milliseconds(), text)
		if !isErr || !strings.Contains(text, tc.want) {
			t.Errorf("%s: isError %v, %q; want %q", tc.name, isErr, text, tc.want)
		}
		if strings.Contains(text, petsSecret) {
			t.Errorf("%s: the secret is in the answer", tc.name)
		}
		// The gateway keeps serving: a search and a call to a healthy upstream work.
		if text, isErr := callText(t, cs, "remote.echo", map[string]any{"message": "still here"}); isErr || text != "echo: still here" {
			t.Fatalf("after %s: %q", tc.name, text)
		}
	}
	// The crashed, hung and garbling stdio server comes back.
	deadline := time.Now().Add(20 * time.Second)
	for {
		text, isErr := callText(t, cs, "fake.echo", map[string]any{"message": "back"})
		if !isErr && text == "echo: back" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fake did not come back: %q", text)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// REST gives the same tool errors with status 200.
	var cr gateway.CallResult
	if s, b := f.do(t, "POST", "/v1/call", "", map[string]any{"name": "pets.failing"}, &cr); s != 200 || !cr.IsError || !strings.Contains(cr.Text, "HTTP 503") {
		t.Fatalf("REST fault: %d %s", s, b)
	}
}

// TestAccess: API keys with scopes, and the per-key rate limit.
func TestAccess(t *testing.T) {
	keys, err := serve.ParseKeys([]byte("# name key scopes\nsearcher search-only-key-0001 search\nagent agent-key-000000002 search,call\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureOpts{keys: keys, rate: 5, burst: 20})
	search := map[string]any{"query": "echo", "k": 1}
	call := map[string]any{"name": "fake.echo", "arguments": map[string]any{"message": "hi"}}
	for _, tc := range []struct {
		path, key string
		body      any
		status    int
		want      string
	}{
		{"/v1/search", "", search, 401, `missing "Authorization: Bearer <key>" header`},
		{"/v1/search", "not-a-key-of-this-server", search, 401, "invalid API key"},
		{"/v1/search", "search-only-key-0001", search, 200, `"search_id"`},
		{"/v1/call", "search-only-key-0001", call, 403, `API key "searcher" lacks scope "call" (it has search)`},
		{"/v1/call", "agent-key-000000002", call, 200, "echo: hi"},
		{"/v1/retrieve", "", map[string]any{"query": "echo"}, 401, "needs an API key"},
	} {
		if s, b := f.do(t, "POST", tc.path, tc.key, tc.body, nil); s != tc.status || !strings.Contains(b, tc.want) {
			t.Errorf("POST %s with %q: %d %s, want %d %q", tc.path, tc.key, s, b, tc.status, tc.want)
		}
	}
	if s, _ := f.do(t, "GET", "/openapi.json", "", nil, nil); s != 200 {
		t.Errorf("GET /openapi.json needs no key: %d", s)
	}
	// MCP: no key is refused; a search key can search, not call.
	cs := f.mcpClient(t, "search-only-key-0001")
	if text, isErr := callText(t, cs, "fake.echo", map[string]any{"message": "x"}); !isErr || !strings.Contains(text, `lacks scope "call"`) {
		t.Errorf("MCP call with a search key: %q", text)
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Errorf("MCP list with a search key: %v", err)
	}
	// The rate limit: a burst of 20, then 429 with Retry-After.
	limited := 0
	for range 30 {
		if s, _ := f.do(t, "POST", "/v1/search", "search-only-key-0001", search, nil); s == 429 {
			limited++
		}
	}
	if limited == 0 {
		t.Error("30 requests at once with -rate 5 -burst 20: none limited")
	}
	// Another key has its own budget.
	if s, b := f.do(t, "POST", "/v1/search", "agent-key-000000002", search, nil); s != 200 {
		t.Errorf("other key limited: %d %s", s, b)
	}
	for _, secret := range []string{"search-only-key-0001", "agent-key-000000002"} {
		if strings.Contains(f.logs.String(), secret) {
			t.Errorf("the log holds key %s", secret)
		}
	}
}

// TestListChanged: a tool an upstream adds (notifications/tools/list_changed) reaches the
// library file, the live index and searches.
func TestListChanged(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	cs := f.mcpClient(t, "")
	n0 := len(f.gw.Library().Tools)
	if text, isErr := callText(t, cs, "fake.grow", nil); isErr || text != "grown" {
		t.Fatalf("grow: %q", text)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, ok := f.gw.Tool("fake.weather_forecast"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new tool did not arrive; log:\n%s", f.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(f.gw.Library().Tools); n != n0+1 {
		t.Fatalf("library: %d tools, want %d", n, n0+1)
	}
	lib, err := library.Read(f.libPath)
	if err != nil || len(lib.Tools) != n0+1 {
		t.Fatalf("library file: %v, %d tools", err, len(lib.Tools))
	}
	if _, ok := f.store.R.Library().Lookup("fake.weather_forecast"); !ok || f.store.Pending() == 0 {
		t.Fatalf("index: the tool is not there (pending updates %d)", f.store.Pending())
	}
	var sr gateway.SearchResult
	f.do(t, "POST", "/v1/search", "", map[string]any{"query": "weather", "k": 100}, &sr)
	found := false
	for _, d := range sr.Tools {
		found = found || d.Name == "fake.weather_forecast"
	}
	if !found {
		t.Fatal("search does not find the new tool")
	}
	if text, isErr := callText(t, cs, "fake.weather_forecast", map[string]any{"city": "Oslo"}); isErr || text != "sunny" {
		t.Fatalf("calling the new tool: %q", text)
	}
}

// TestUsageLog: searches, calls and feedback are logged, one fsynced JSON line each.
func TestUsageLog(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	var sr gateway.SearchResult
	f.do(t, "POST", "/v1/search", "", map[string]any{"query": "echo a message", "k": 3}, &sr)
	f.do(t, "POST", "/v1/call", "", map[string]any{"name": "fake.echo", "arguments": map[string]any{"message": "a"}, "search_id": sr.SearchID}, nil)
	f.do(t, "POST", "/v1/call", "", map[string]any{"name": "fake.echo", "arguments": map[string]any{}}, nil)
	f.do(t, "POST", "/v1/call", "", map[string]any{"name": "pets.failing"}, nil)
	if s, b := f.do(t, "POST", "/v1/feedback", "", map[string]any{"name": "fake.echo", "success": true, "search_id": sr.SearchID}, nil); s != 200 {
		t.Fatalf("feedback: %d %s", s, b)
	}
	cs := f.mcpClient(t, "")
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "report_result", Arguments: map[string]any{"name": "pets.failing", "success": false, "note": "503"}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(f.state, gateway.UsageFile))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r gateway.UsageRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%v in %s", err, line)
		}
		got = append(got, r.Kind+":"+r.Tool+":"+r.Outcome)
		if r.Kind == "search" && (len(r.Shown) != 3 || r.Query != "echo a message" || r.SearchID != sr.SearchID) {
			t.Errorf("search record %s", line)
		}
	}
	want := "search::,call:fake.echo:ok,call:fake.echo:invalid_arguments,call:pets.failing:tool_error,feedback:fake.echo:success,feedback:pets.failing:failure"
	if strings.Join(got, ",") != want {
		t.Fatalf("usage log:\n%s\nwant %s", strings.Join(got, ","), want)
	}
}

// TestOpenAPIDocument: GET /openapi.json is a valid OpenAPI 3 description of the REST API.
func TestOpenAPIDocument(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	_, b := f.do(t, "GET", "/openapi.json", "", nil, nil)
	doc, err := openapi3.NewLoader().LoadFromData([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/search", "/v1/tools", "/v1/tools/{name}", "/v1/call", "/v1/feedback"} {
		if doc.Paths.Find(p) == nil {
			t.Errorf("no path %s", p)
		}
	}
}

// TestMCPAccessJSON: /mcp refuses a request without a valid key with the REST endpoints'
// JSON error body, not plain text.
func TestMCPAccessJSON(t *testing.T) {
	keys, err := serve.ParseKeys([]byte("agent agent-key-000000002 search,call\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureOpts{keys: keys})
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	for _, tc := range []struct {
		name, auth string
		want       string
	}{
		{"no key", "", `missing "Authorization: Bearer <key>" header`},
		{"empty bearer", "Bearer ", `missing "Authorization: Bearer <key>" header`},
		{"wrong key", "Bearer not-a-key-of-this-server", `invalid API key in the "Authorization" header`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", f.srv.URL+"/mcp", strings.NewReader(initialize))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := f.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var e struct {
				Error string `json:"error"`
			}
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
				json.Unmarshal(b, &e) != nil || !strings.Contains(e.Error, tc.want) || resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%d %q %s (WWW-Authenticate %q), want 401 application/json {\"error\": %q...}", resp.StatusCode, resp.Header.Get("Content-Type"), b, resp.Header.Get("WWW-Authenticate"), tc.want)
			}
		})
	}
}
