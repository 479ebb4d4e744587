package serve

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/toolindex/store"
)

// checkFindTools lists the tools of an MCP session and calls find_tools, checking the answers
// against the store's retriever.
func checkFindTools(t *testing.T, ctx context.Context, cs *mcp.ClientSession, st *store.Store) {
	t.Helper()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 || list.Tools[0].Name != "find_tools" || !strings.Contains(list.Tools[0].Description, "natural language") {
		t.Fatalf("tools: %+v", list.Tools)
	}
	schema, _ := json.Marshal(list.Tools[0].InputSchema)
	if !strings.Contains(string(schema), `"query"`) || !strings.Contains(string(schema), `"required":["query"]`) {
		t.Fatalf("input schema %s", schema)
	}
	d, _ := data.Default()
	q := d.Queries[4].Text
	want, err := st.R.Retrieve(ctx, q, 3)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "find_tools", Arguments: map[string]any{"query": q, "k": 3}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("find_tools failed: %+v", res.Content)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out FindToolsOutput
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Tools) != 3 || len(res.Content) != 1 {
		t.Fatalf("find_tools: %s", b)
	}
	for i, x := range out.Tools {
		if x.ID != want[i].ToolID || x.Description != want[i].Text || math.Abs(float64(x.Score-want[i].Score)) > 1e-6 || x.Name == "" {
			t.Fatalf("rank %d: %+v, want %+v", i, x, want[i])
		}
	}
	// Bad arguments are tool errors that say what is wrong.
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"query": " "}, `"query" is empty`},
		{map[string]any{"query": "x", "k": 1000}, `"k" = 1000: must be between 1 and 100`},
		{map[string]any{"k": 3}, "query"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "find_tools", Arguments: tc.args})
		if err != nil {
			t.Fatal(err)
		}
		msg := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				msg = tc.Text
			}
		}
		if !res.IsError || !strings.Contains(msg, tc.want) {
			t.Fatalf("find_tools %v: error %v %q, want %q", tc.args, res.IsError, msg, tc.want)
		}
	}
}

func TestMCPInMemory(t *testing.T) {
	st := openStore(t, newIndex(t), 0)
	defer st.Close()
	ctx := t.Context()
	srv := NewMCP(st, Config{})
	t1, t2 := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, t1, nil); err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, t2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	checkFindTools(t, ctx, cs, st)
}

func TestMCPHTTP(t *testing.T) {
	srv, st, logs := newServer(t, Config{MCP: true})
	ctx := t.Context()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: srv.Client(), DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	checkFindTools(t, ctx, cs, st)
	if !strings.Contains(logs.String(), `"route":"mcp"`) {
		t.Fatal("MCP requests not logged")
	}
}
