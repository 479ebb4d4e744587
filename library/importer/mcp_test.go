package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret/library"
)

func names(tools []library.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.ID()
	}
	return out
}

// checkTools checks what every imported tool must satisfy: a valid library (schemas
// compile), a retrieval text, the namespace and source kind.
func checkTools(t *testing.T, tools []library.Tool, kind string) {
	t.Helper()
	l := &library.Library{Tools: tools}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	texts, err := l.Texts()
	if err != nil {
		t.Fatal(err)
	}
	for i, tool := range tools {
		if tool.Source.Kind != kind || texts[i] == "" {
			t.Errorf("tool %s: source %+v, text %q", tool.ID(), tool.Source, texts[i])
		}
	}
}

func writeConfig(t *testing.T, servers map[string]MCPServer) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMCPReferenceServers imports the npm reference servers over stdio from an mcpServers
// configuration, with a server that fails beside them.
func TestMCPReferenceServers(t *testing.T) {
	node, everything := nodeServer(t, "server-everything")
	_, filesystem := nodeServer(t, "server-filesystem")
	_, memory := nodeServer(t, "server-memory")
	dir := t.TempDir()
	cfgPath := writeConfig(t, map[string]MCPServer{
		"everything": {Command: node, Args: []string{everything}},
		"filesystem": {Command: node, Args: []string{filesystem, dir}},
		"memory":     {Command: node, Args: []string{memory}, Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}},
		"broken":     {Command: filepath.Join(dir, "no-such-server")},
		"off":        {Command: "/bin/false", Disabled: true},
	})
	cfg, err := ReadMCPConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tools, reports, err := MCP(t.Context(), cfg, nil, 0)
	if err == nil || !strings.Contains(err.Error(), `MCP server "broken"`) || strings.Contains(err.Error(), "everything") {
		t.Errorf("error %v, want one naming the broken server only", err)
	}
	t.Logf("imported %d tools from 3 npm reference servers over stdio in %s", len(tools), time.Since(start).Round(time.Millisecond))
	if len(reports) != 3 {
		t.Fatalf("%d reports, want 3: %v", len(reports), reports)
	}
	want := map[string][]string{"everything": {"echo"}, "filesystem": {"read_text_file", "write_file", "list_directory"},
		"memory": {"create_entities", "read_graph"}}
	got := map[string][]string{}
	for _, tool := range tools {
		got[tool.Namespace] = append(got[tool.Namespace], tool.Name)
		if tool.Source.Server != tool.Namespace || tool.Source.Transport != "stdio" || tool.Source.Origin != cfgPath {
			t.Errorf("%s: source %+v", tool.ID(), tool.Source)
		}
	}
	for _, r := range reports {
		t.Log(r)
		if r.Tools != len(got[r.Name]) || r.Tools == 0 || len(r.Skipped) > 0 || r.Group != library.GroupOf(library.KindMCP, r.Name) {
			t.Errorf("report %+v: %d tools imported", r, len(got[r.Name]))
		}
		for _, n := range want[r.Name] {
			if !slices.Contains(got[r.Name], n) {
				t.Errorf("server %s: no tool %q in %v", r.Name, n, got[r.Name])
			}
		}
	}
	checkTools(t, tools, library.KindMCP)
	// The filesystem server's read-only tools say so.
	for _, tool := range tools {
		if tool.ID() == "filesystem.read_text_file" && !strings.Contains(string(tool.Annotations), `"readOnlyHint":true`) {
			t.Errorf("%s: annotations %s", tool.ID(), tool.Annotations)
		}
	}
}

// TestMCPStreamableHTTP imports server-everything over streamable HTTP and checks it lists
// the same tools as over stdio.
func TestMCPStreamableHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts two node servers")
	}
	node, everything := nodeServer(t, "server-everything")
	port := freePort(t)
	cmd := exec.Command(node, everything, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	startHTTPServer(t, cmd, port)
	viaHTTP, r, err := MCPServerTools(t.Context(), "everything", MCPServer{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	viaStdio, _, err := MCPServerTools(t.Context(), "everything", MCPServer{Command: node, Args: []string{everything}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names(viaHTTP), names(viaStdio)) || len(viaHTTP) == 0 {
		t.Errorf("over HTTP %v, over stdio %v", names(viaHTTP), names(viaStdio))
	}
	if viaHTTP[0].Source.Transport != "http" {
		t.Errorf("transport %q", viaHTTP[0].Source.Transport)
	}
}

// TestMCPPython imports a FastMCP server (the Python MCP SDK) over stdio and streamable HTTP.
func TestMCPPython(t *testing.T) {
	py := pythonMCP(t)
	script, _ := filepath.Abs("testdata/fastmcp_server.py")
	port := freePort(t)
	startHTTPServer(t, exec.Command(py, script, "streamable-http", strconv.Itoa(port)), port)
	for _, s := range []MCPServer{
		{Command: py, Args: []string{script, "stdio"}},
		{Type: "http", URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)},
	} {
		tools, r, err := MCPServerTools(t.Context(), "py-tools", s, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Log(r)
		if got := names(tools); !slices.Equal(got, []string{"py-tools.add", "py-tools.search_docs", "py-tools.convert_temperature"}) {
			t.Fatalf("tools %v", got)
		}
		checkTools(t, tools, library.KindMCP)
		text, _ := library.Text(tools[1], "")
		if tools[1].Title != "Search the docs" || text != "py-tools.search_docs: Search the docs. Search the documentation for pages matching a query. Parameters: query (string, required); tags; limit (integer)" {
			t.Errorf("title %q, text %q", tools[1].Title, text)
		}
		if len(tools[0].OutputSchema) == 0 {
			t.Error("no output schema")
		}
	}
}

// TestMCPPagination imports from a Go SDK server that lists its tools three to a page, over
// streamable HTTP with configured headers.
func TestMCPPagination(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "paged", Version: "v1"}, &mcp.ServerOptions{PageSize: 3})
	for i := range 8 {
		mcp.AddTool(srv, &mcp.Tool{Name: fmt.Sprintf("tool_%d", i), Description: fmt.Sprintf("Tool number %d.", i)},
			func(context.Context, *mcp.CallToolRequest, struct {
				X int `json:"x" jsonschema:"an integer"`
			}) (*mcp.CallToolResult, any, error) {
				return nil, nil, nil
			})
	}
	var pages, auth int
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer s3cret" {
			auth++
		}
		if r.Method == http.MethodPost {
			pages++
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	t.Setenv("TOOLRET_TEST_TOKEN", "s3cret")
	cfg, err := ParseMCPConfig([]byte(`{"mcpServers":{"paged.server":{"url":"` + ts.URL + `","headers":{"Authorization":"Bearer ${env:TOOLRET_TEST_TOKEN}"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tools, reports, err := MCP(t.Context(), cfg, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 8 || tools[7].ID() != "paged_server.tool_7" || tools[0].Source.Server != "paged.server" {
		t.Fatalf("tools %v", names(tools))
	}
	if pages < 3+2 || auth == 0 || len(reports[0].Notes) != 1 {
		t.Errorf("%d POSTs (want 3 pages of tools/list beside initialize), %d with the header, report %+v", pages, auth, reports[0])
	}
	checkTools(t, tools, library.KindMCP)
}

func TestMCPConfigErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{`, "malformed JSON"},
		{`{"mcpServers":{}}`, "no servers"},
		{`{"mcpServers":{"a":{}}}`, `server "a": neither "command" nor "url"`},
		{`{"mcpServers":{"a":{"command":"x","url":"http://h"}}}`, "both"},
		{`{"mcpServers":{"a":{"type":"websocket","url":"ws://h"}}}`, `unknown type "websocket"`},
		{`{"mcpServers":{"a":{"type":"sse"}}}`, `needs a "url"`},
	} {
		if _, err := ParseMCPConfig([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.in, err, c.want)
		}
	}
	cfg, err := ParseMCPConfig([]byte(`{"servers":{"b":{"type":"stdio","command":"x"},"a":{"url":"http://h"},"c":{"command":"y","disabled":true}}}`))
	if err != nil || !slices.Equal(cfg.Names(), []string{"a", "b"}) {
		t.Errorf("VS Code's \"servers\": %v %v", cfg, err)
	}
	os.Unsetenv("TOOLRET_NO_SUCH_VAR")
	_, err = Connect(t.Context(), "x", MCPServer{Command: "x", Env: map[string]string{"TOKEN": "${TOOLRET_NO_SUCH_VAR}"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "TOOLRET_NO_SUCH_VAR is not set") {
		t.Errorf("unset variable: %v", err)
	}
}
