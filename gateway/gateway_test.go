package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret/gateway"
)

// TestSearchAndCall searches and calls tools of every upstream kind over REST and MCP.
func TestSearchAndCall(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	var sr gateway.SearchResult
	if s, b := f.do(t, "POST", "/v1/search", "", map[string]any{"query": "echo a message back", "k": 50}, &sr); s != 200 {
		t.Fatalf("search: %d %s", s, b)
	}
	names := map[string]gateway.Definition{}
	for _, d := range sr.Tools {
		names[d.Name] = d
		if d.Score == nil || len(d.InputSchema) == 0 || d.Source == "" {
			t.Errorf("definition %+v", d)
		}
	}
	echo, ok := names["fake.echo"]
	if !ok || sr.LibrarySize != len(f.gw.Library().Tools) || sr.SearchID == "" {
		t.Fatalf("search: %d of %d tools, no fake.echo: %+v", len(sr.Tools), sr.LibrarySize, names)
	}
	if echo.Server != "fake" || echo.Namespace != "fake" || !echo.Callable || !strings.Contains(string(echo.InputSchema), `"message"`) {
		t.Fatalf("fake.echo: %+v", echo)
	}
	// Filters.
	var fr gateway.SearchResult
	f.do(t, "POST", "/v1/search", "", map[string]any{"query": "a pet", "k": 3, "filters": map[string]any{"namespace": "pets"}}, &fr)
	if len(fr.Tools) != 3 {
		t.Fatalf("filtered search: %+v", fr.Tools)
	}
	for _, d := range fr.Tools {
		if d.Namespace != "pets" || d.Source != "openapi" {
			t.Fatalf("filter namespace pets let %s through", d.Name)
		}
	}
	// REST calls: MCP over stdio and HTTP, OpenAPI with path, query and body.
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"fake.echo", map[string]any{"message": "hello"}, "echo: hello"},
		{"remote.echo", map[string]any{"message": "over http"}, "echo: over http"},
		{"fake.add", map[string]any{"a": 2, "b": 40}, `"sum":42`},
		{"pets.getPet", map[string]any{"petId": 12, "verbose": true}, `"id": "12", "name": "Rex", "verbose": "true"`},
		{"pets.createPet", map[string]any{"name": "Tom", "species": "cat"}, `"created": {"name":"Tom","species":"cat"}, "content_type": "application/json"`},
	} {
		var cr gateway.CallResult
		s, b := f.do(t, "POST", "/v1/call", "", map[string]any{"name": tc.name, "arguments": tc.args, "search_id": sr.SearchID}, &cr)
		if s != 200 || cr.IsError || !strings.Contains(cr.Text, tc.want) {
			t.Errorf("call %s: %d %s, want %s", tc.name, s, b, tc.want)
		}
	}
	// MCP: the tools, search_tools, call_tool.
	cs := f.mcpClient(t, "")
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, x := range list.Tools {
		tools = append(tools, x.Name)
	}
	if strings.Join(tools, ",") != "call_tool,find_tools,report_result,search_tools" {
		t.Fatalf("MCP tools %v", tools)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "add numbers", "k": 2, "filters": map[string]any{"server": "remote"}}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var msr gateway.SearchResult
	json.Unmarshal(b, &msr)
	if len(msr.Tools) != 2 || msr.Tools[0].Server != "remote" || len(msr.Tools[0].InputSchema) == 0 {
		t.Fatalf("search_tools: %s", b)
	}
	if text, isErr := callText(t, cs, "remote.echo", map[string]any{"message": "via mcp"}); isErr || text != "echo: via mcp" {
		t.Fatalf("call_tool: %q %v", text, isErr)
	}
	// GET /v1/tools and /v1/tools/{name}.
	var tl gateway.ToolList
	if s, b := f.do(t, "GET", "/v1/tools?server=fake&limit=2", "", nil, &tl); s != 200 || tl.Total != 6 || len(tl.Tools) != 2 {
		t.Fatalf("GET /v1/tools: %d %s", s, b)
	}
	var td gateway.ToolDetail
	if s, b := f.do(t, "GET", "/v1/tools/fake.echo", "", nil, &td); s != 200 || td.ID != "fake.echo" || td.Text == "" || !strings.Contains(string(td.InputSchema), "message") {
		t.Fatalf("GET /v1/tools/fake.echo: %d %s", s, b)
	}
	// The schema in the upstream's order (message, then loud), over REST and MCP.
	if m, l := strings.Index(string(td.InputSchema), `"message"`), strings.Index(string(td.InputSchema), `"loud"`); m < 0 || l < m {
		t.Errorf("GET /v1/tools/fake.echo: input schema %s: properties not in the upstream's order (message, loud)", td.InputSchema)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "echo a message back", "k": 6, "filters": map[string]any{"server": "fake"}}})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("search_tools: %v %+v", err, res)
	}
	// Every fake tool (the stub model's ranking is arbitrary): echo's schema among them.
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, `"properties":{"message":`) {
		t.Errorf("search_tools: %s: properties not in the upstream's order (message, loud)", text)
	}
	if s, _ := f.do(t, "GET", "/v1/tools/nope.nothing", "", nil, nil); s != 404 {
		t.Fatalf("unknown tool: %d", s)
	}
}

// TestMCPArgumentErrors: arguments of the gateway's MCP tools of the wrong JSON type are
// answered as the REST API answers them, naming the field and the type it wants.
func TestMCPArgumentErrors(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	cs := f.mcpClient(t, "")
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"search_tools", map[string]any{"query": "add numbers", "k": "5"}, `search_tools arguments: field "k" is a JSON string, want an integer`},
		{"search_tools", map[string]any{"query": 3}, `search_tools arguments: field "query" is a JSON number, want a string`},
		{"search_tools", map[string]any{"query": "x", "top": 3}, `search_tools arguments: unknown field "top" (known fields: `},
		{"call_tool", map[string]any{"name": []any{"fake.echo"}}, `call_tool arguments: field "name" is a JSON array, want a string`},
		{"report_result", map[string]any{"name": "fake.echo", "success": "yes"}, `field "success" is a JSON string, want true or false`},
	} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s %v: %v", tc.tool, tc.args, err)
		}
		var text string
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		if !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%s %v: error %v %q, want %q", tc.tool, tc.args, res.IsError, text, tc.want)
		}
	}
}
