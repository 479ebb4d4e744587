package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/gateway"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/serve"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
)

// TestClientNameRoutes: tools whose IDs hold '/' (GitHub), dots (BFCL), or are too long for
// OpenAI get a valid, unique client_name from search and GET /v1/tools; POST /v1/call and
// MCP call_tool take either the ID or the client name; GET /v1/tools/{id} takes IDs with
// unescaped slashes.
func TestClientNameRoutes(t *testing.T) {
	ids := [][2]string{
		{"github", "issues/list-for-repo"}, {"github", "repos/get"},
		{"bfcl", "math.circle_area"}, {"bfcl", "math_circle_area"},
		{"bfcl", strings.Repeat("calculate_", 7)},
		{"fn", "echo"},
	}
	lib := &library.Library{}
	for _, id := range ids {
		lib.Tools = append(lib.Tools, library.Tool{Name: id[1], Namespace: id[0], Description: "does " + id[1],
			InputSchema: json.RawMessage(`{"type": "object"}`), Source: library.Source{Kind: library.KindFunctions}})
	}
	dir := t.TempDir()
	be, _ := backend.Open("go")
	libPath := filepath.Join(dir, "lib.jsonl")
	idx, _, err := gateway.BuildIndex(context.Background(), lib, libPath, stubModel(t), gateway.StateDir(libPath), be)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(idx, 0, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g, err := gateway.New(gateway.Options{Library: lib, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(serve.New(st, serve.Config{MCP: true, Extension: g}).Handler())
	defer srv.Close()
	do := func(method, path string, body, out any) int {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, srv.URL+path, rd)
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
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
		return resp.StatusCode
	}

	var list gateway.ToolList
	if s := do("GET", "/v1/tools", nil, &list); s != 200 || len(list.Tools) != len(ids) {
		t.Fatalf("GET /v1/tools: %d %+v", s, list)
	}
	client := map[string]string{} // ID -> client name
	seen := map[string]bool{}
	for _, d := range list.Tools {
		if !library.ValidClientName(d.ClientName) || seen[d.ClientName] {
			t.Errorf("%s: client_name %q is not valid or not unique", d.Name, d.ClientName)
		}
		seen[d.ClientName] = true
		client[d.Name] = d.ClientName
	}
	if client["fn.echo"] != "fn__echo" {
		t.Errorf("fn.echo: client_name %q, want fn__echo", client["fn.echo"])
	}
	var sr gateway.SearchResult
	if s := do("POST", "/v1/search", map[string]any{"query": "list issues", "k": len(ids)}, &sr); s != 200 {
		t.Fatalf("search: %d", s)
	}
	for _, d := range sr.Tools {
		if d.ClientName != client[d.Name] {
			t.Errorf("search: %s has client_name %q, GET /v1/tools %q", d.Name, d.ClientName, client[d.Name])
		}
	}
	cs := mcpConnect(t, srv.URL)
	for _, id := range ids {
		tool := id[0] + "." + id[1]
		for _, name := range []string{tool, client[tool]} {
			// POST /v1/call: found (a function-list tool answers that it has no upstream), named by its ID.
			var cr gateway.CallResult
			if s := do("POST", "/v1/call", map[string]any{"name": name, "arguments": map[string]any{}}, &cr); s != 200 || cr.Name != tool {
				t.Errorf("POST /v1/call %q: %d %+v, want the tool %s", name, s, cr, tool)
			}
			text, _ := callText(t, cs, name, map[string]any{})
			if !strings.Contains(text, "has no upstream the gateway can call") || !strings.Contains(text, tool) {
				t.Errorf("call_tool %q: %s", name, text)
			}
			// GET /v1/tools/{id...} with the slash as it is.
			var td gateway.ToolDetail
			if s := do("GET", "/v1/tools/"+name, nil, &td); s != 200 || td.ID != tool || td.ClientName != client[tool] {
				t.Errorf("GET /v1/tools/%s: %d %+v", name, s, td)
			}
		}
	}
	// The old reverse mapping (first "__" back to ".") names no tool; nor does a made-up name.
	for _, name := range []string{"bfcl.math__circle_area", "github.issues", "nope"} {
		if s := do("POST", "/v1/call", map[string]any{"name": name, "arguments": map[string]any{}}, nil); s != 404 {
			t.Errorf("POST /v1/call %q: %d, want 404", name, s)
		}
	}
	if s := do("GET", "/v1/tools/github.issues%2Flist-for-repo", nil, nil); s != 200 {
		t.Errorf("GET with %%2F: %d", s)
	}
}

// mcpConnect connects a Go MCP client to base/mcp.
func mcpConnect(t *testing.T, base string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
