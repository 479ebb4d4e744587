package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/library/importer"
)

// cacheDir is where scripts/install-mcp-test.sh installs the real MCP servers and SDKs.
func cacheDir() string {
	if d := os.Getenv("TOOLRET_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "toolret")
}

const installHint = "run scripts/install-mcp-test.sh to install it"

// npmPackage returns the directory of an installed npm package, skipping t when absent.
func npmPackage(t testing.TB, pkg string) string {
	t.Helper()
	p := filepath.Join(cacheDir(), "mcp-npm", "node_modules", pkg)
	if _, err := os.Stat(filepath.Join(p, "package.json")); err != nil {
		t.Skipf("npm package %s not installed (%v): %s", pkg, err, installHint)
	}
	return p
}

func nodeBin(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node not found: %s", installHint)
	}
	return node
}

// pythonMCP returns the Python of the venv that has the Python MCP SDK, skipping t when absent.
func pythonMCP(t testing.TB) string {
	t.Helper()
	py := filepath.Join(cacheDir(), "mcp-venv", "bin", "python")
	if err := exec.Command(py, "-c", "import mcp.client.streamable_http").Run(); err != nil {
		t.Skipf("Python MCP SDK not installed in %s (%v): %s", filepath.Dir(filepath.Dir(py)), err, installHint)
	}
	return py
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serveGateway runs `toolret serve -library LIB -model STUB -upstreams CONFIG -mcp http`
// (toolret.Serve, as the command calls it) over the npm reference servers everything and
// memory, and returns its base URL once it is ready (/readyz).
func serveGateway(t *testing.T) string {
	t.Helper()
	node := nodeBin(t)
	everything := filepath.Join(npmPackage(t, "@modelcontextprotocol/server-everything"), "dist", "index.js")
	memory := filepath.Join(npmPackage(t, "@modelcontextprotocol/server-memory"), "dist", "index.js")
	dir := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": node, "args": []string{everything}},
		"memory":     map[string]any{"command": node, "args": []string{memory}, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}},
	}})
	upPath := filepath.Join(dir, "mcp.json")
	writeFile(t, upPath, string(cfg))
	start := time.Now()
	lib := importLibraryFrom(t, dir, upPath)
	t.Logf("imported the reference servers: %s", time.Since(start).Round(time.Millisecond))
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	scfg := toolret.DefaultServeConfig()
	scfg.Library, scfg.Pretrained, scfg.Upstreams, scfg.Addr, scfg.MCP = lib, stubModel(t), upPath, addr, "http"
	scfg.Log = slog.New(slog.NewJSONHandler(logs, nil))
	start = time.Now()
	go func() { done <- toolret.Serve(ctx, scfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	base := "http://" + addr
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("serve: %v\n%s", err, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("serve did not answer in a minute:\n%s", logs.String())
		}
	}
	t.Logf("serve -library -model (index built at start) answered after %s", time.Since(start).Round(time.Millisecond))
	return base
}

// importLibraryFrom imports the tools of the servers of mcpServers configuration upPath
// into dir/tools.jsonl, as `toolret import -mcp` does.
func importLibraryFrom(t *testing.T, dir, upPath string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lib, reports, err := importer.Import(ctx, importer.Sources{MCP: []string{upPath}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		t.Logf("import: %s", r)
	}
	p := filepath.Join(dir, "tools.jsonl")
	if err := library.Write(p, lib); err != nil {
		t.Fatal(err)
	}
	return p
}

type clientOut struct {
	Tools      []string       `json:"tools"`
	SearchMS   float64        `json:"search_ms"`
	CallMS     float64        `json:"call_ms"`
	TotalMS    float64        `json:"total_ms"`
	Found      []string       `json:"found"`
	Definition map[string]any `json:"definition"`
	IsError    bool           `json:"is_error"`
	Answer     string         `json:"answer"`
	Invalid    struct {
		IsError bool   `json:"is_error"`
		Text    string `json:"text"`
	} `json:"invalid"`
	OpenAITool  map[string]any    `json:"openai_tool"`
	ToolMessage map[string]string `json:"tool_message"`
}

func runClient(t *testing.T, name string, cmd *exec.Cmd) clientOut {
	t.Helper()
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s: %v\n%s\n%s", name, err, out, stderr)
	}
	var o clientOut
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("%s: %v in %s", name, err, out)
	}
	t.Logf("%s: %s", name, strings.TrimSpace(string(out)))
	return o
}

// checkMCPClient checks what a real MCP client got: the gateway's tools, a definition of
// everything.echo with its input schema, the upstream's answer to the call, and a tool error
// naming the missing argument.
func checkMCPClient(t *testing.T, name string, o clientOut, message string) {
	t.Helper()
	if strings.Join(o.Tools, ",") != "call_tool,find_tools,report_result,search_tools" {
		t.Errorf("%s: tools %v", name, o.Tools)
	}
	schema, _ := json.Marshal(o.Definition["input_schema"])
	if o.Definition["name"] != "everything.echo" || o.Definition["server"] != "everything" || !strings.Contains(string(schema), `"message"`) {
		t.Errorf("%s: definition %v", name, o.Definition)
	}
	if o.IsError || o.Answer != "Echo: "+message {
		t.Errorf("%s: call answered %q (isError %v), want the upstream's %q", name, o.Answer, o.IsError, "Echo: "+message)
	}
	if !o.Invalid.IsError || !strings.Contains(o.Invalid.Text, `argument "message" is required`) {
		t.Errorf("%s: invalid call: %+v", name, o.Invalid)
	}
}

// TestRealClients: the Python and npm MCP SDKs, and an OpenAI-client-style REST script,
// find and call server-everything's echo through the gateway.
func TestRealClients(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the npm reference servers")
	}
	py := pythonMCP(t)
	node := nodeBin(t)
	sdk := npmPackage(t, "@modelcontextprotocol/sdk")
	base := serveGateway(t)
	query := "echo back the message I send"
	t.Run("python-mcp", func(t *testing.T) {
		o := runClient(t, "python mcp SDK", exec.Command(py, filepath.Join("testdata", "client.py"), base+"/mcp", query, "everything", "hello from python"))
		checkMCPClient(t, "python", o, "hello from python")
	})
	t.Run("npm-mcp", func(t *testing.T) {
		o := runClient(t, "npm mcp SDK", exec.Command(node, filepath.Join("testdata", "client.mjs"), sdk, base+"/mcp", query, "everything", "hello from node"))
		checkMCPClient(t, "node", o, "hello from node")
	})
	t.Run("openai-style-rest", func(t *testing.T) {
		o := runClient(t, "REST (urllib)", exec.Command(py, filepath.Join("testdata", "openai_style.py"), base, query, "everything", "hello over REST"))
		fn, _ := o.OpenAITool["function"].(map[string]any)
		if fn["name"] != "everything__echo" || fn["parameters"] == nil {
			t.Errorf("OpenAI tool %v", o.OpenAITool)
		}
		if o.IsError || o.ToolMessage["content"] != "Echo: hello over REST" || o.ToolMessage["role"] != "tool" {
			t.Errorf("tool message %v", o.ToolMessage)
		}
	})
	// server-memory: a call with structured arguments reaches the upstream's state.
	t.Run("memory", func(t *testing.T) {
		resp, err := http.Post(base+"/v1/call", "application/json", strings.NewReader(
			`{"name": "memory.create_entities", "arguments": {"entities": [{"name": "toolret", "entityType": "project", "observations": ["a tool gateway"]}]}}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var cr struct {
			IsError bool   `json:"is_error"`
			Text    string `json:"text"`
		}
		json.NewDecoder(resp.Body).Decode(&cr)
		if resp.StatusCode != 200 || cr.IsError || !strings.Contains(cr.Text, "a tool gateway") {
			t.Fatalf("memory.create_entities: %d %+v", resp.StatusCode, cr)
		}
		t.Logf("memory.create_entities: %s", fmt.Sprint(cr.Text))
	})
}
