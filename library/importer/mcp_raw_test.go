package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/toolret/toolret/library"
)

// rawToolsJSON is a tools/list answer as a server writes it: properties not in alphabetical
// order, and only some of the annotation hints (the filesystem server's read-only tools send
// readOnlyHint alone).
const rawToolsJSON = `[
 {"name": "read_text_file", "description": "Read a file.",
  "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "tail": {"type": "number"}, "head": {"type": "number"}}, "required": ["path"]},
  "annotations": {"readOnlyHint": true}},
 {"name": "write_file", "description": "Write a file.",
  "inputSchema": {"type": "object", "properties": {"zeta": {"type": "object", "properties": {"y": {"type": "string"}, "x": {"type": "string"}}}, "alpha": {"type": "string"}}},
  "outputSchema": {"type": "object", "properties": {"written": {"type": "integer"}, "at": {"type": "string"}}},
  "annotations": {"destructiveHint": true, "idempotentHint": true}},
 {"name": "plain", "inputSchema": {"type": "object"}}
]`

// rawAnswer answers JSON-RPC message b as a server listing the tools of rawToolsJSON,
// compacted to one line; nothing for a notification.
func rawAnswer(b []byte) ([]byte, error) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		return nil, fmt.Errorf("request %s: %w", b, err)
	}
	if len(req.ID) == 0 {
		return nil, nil
	}
	var body string
	switch req.Method {
	case "initialize":
		body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}}`, req.ID, req.Params.ProtocolVersion)
	case "tools/list":
		body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":%s}}`, req.ID, rawToolsJSON)
	default:
		body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
	}
	var c bytes.Buffer
	err := json.Compact(&c, []byte(body)) // Compact keeps the order
	return c.Bytes(), err
}

// serveRawStdio is the stdio server of rawAnswer (the test binary with rawMCPEnv set).
func serveRawStdio(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		a, err := rawAnswer(sc.Bytes())
		if err != nil {
			return err
		}
		if a != nil {
			if _, err := fmt.Fprintf(out, "%s\n", a); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

// rawMCPHandler is the streamable HTTP server of rawAnswer: JSON bodies or, with sse,
// event streams.
func rawMCPHandler(t *testing.T, sse bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		b, _ := io.ReadAll(r.Body)
		a, err := rawAnswer(b)
		if err != nil {
			t.Error(err)
		}
		if a == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", a)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(a)
	})
}

// importRaw imports the tools of rawAnswer over stdio and over streamable HTTP (JSON
// bodies, then event streams) and calls check with each.
func importRaw(t *testing.T, check func(t *testing.T, via string, tool library.Tool)) {
	for _, via := range []string{"stdio", "http", "http+sse"} {
		srv := MCPServer{Command: os.Args[0], Env: map[string]string{rawMCPEnv: "1"}}
		if via != "stdio" {
			ts := httptest.NewServer(rawMCPHandler(t, via == "http+sse"))
			defer ts.Close()
			srv = MCPServer{URL: ts.URL}
		}
		tools, _, err := MCP(t.Context(), &MCPConfig{Servers: map[string]MCPServer{"fs": srv}}, nil, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(tools) != 3 {
			t.Fatalf("%s: tools %v", via, names(tools))
		}
		for _, tool := range tools {
			check(t, via, tool)
		}
	}
}

// TestMCPSchemaOrder checks that an MCP server's tools keep their schemas as the server
// sent them: properties, nested ones too, in the server's order, not alphabetised.
func TestMCPSchemaOrder(t *testing.T) {
	want := map[string][2]string{
		"read_text_file": {`{"type":"object","properties":{"path":{"type":"string"},"tail":{"type":"number"},"head":{"type":"number"}},"required":["path"]}`, ``},
		"write_file": {`{"type":"object","properties":{"zeta":{"type":"object","properties":{"y":{"type":"string"},"x":{"type":"string"}}},"alpha":{"type":"string"}}}`,
			`{"type":"object","properties":{"written":{"type":"integer"},"at":{"type":"string"}}}`},
		"plain": {`{"type":"object"}`, ``},
	}
	importRaw(t, func(t *testing.T, via string, tool library.Tool) {
		w := want[tool.Name]
		if got := [2]string{string(tool.InputSchema), string(tool.OutputSchema)}; got != w {
			t.Errorf("%s: %s: input and output schema\n%s\n%s\nwant\n%s\n%s", via, tool.Name, got[0], got[1], w[0], w[1])
		}
	})
}

// TestMCPAnnotationsAsSent checks that an MCP tool's annotations are kept as the server sent
// them: only the hints sent, none added with its default (the SDK's idempotentHint: false).
func TestMCPAnnotationsAsSent(t *testing.T) {
	want := map[string]string{"read_text_file": `{"readOnlyHint":true}`, "write_file": `{"destructiveHint":true,"idempotentHint":true}`, "plain": ``}
	importRaw(t, func(t *testing.T, via string, tool library.Tool) {
		if got := string(tool.Annotations); got != want[tool.Name] {
			t.Errorf("%s: %s: annotations %s, want %s", via, tool.Name, got, want[tool.Name])
		}
	})
}
