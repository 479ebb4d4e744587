package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPConfig is an mcpServers configuration, as MCP clients keep it:
// {"mcpServers": {"name": {"command": "...", "args": [...], "env": {...}} | {"url": "..."}}}
// ("servers" is read too).
type MCPConfig struct {
	// Path is the file it was read from.
	Path    string
	Servers map[string]MCPServer
}

// MCPServer is one server of an mcpServers configuration: a command line (stdio) or a URL
// (streamable HTTP; "type": "sse" for the older HTTP+SSE transport). Values of env, headers,
// args and url may name environment variables as ${VAR} or ${env:VAR} (Expand).
type MCPServer struct {
	Type     string            `json:"type,omitempty"` // "stdio", "http" ("streamable-http", "streamableHttp"), "sse"; empty: by command or url
	Command  string            `json:"command,omitempty"`
	Args     []string          `json:"args,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	URL      string            `json:"url,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	Disabled bool              `json:"disabled,omitempty"`
}

// ReadMCPConfig reads the mcpServers configuration in file path (ParseMCPConfig).
func ReadMCPConfig(path string) (*MCPConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-mcp %w", err)
	}
	c, err := ParseMCPConfig(b)
	if err != nil {
		return nil, fmt.Errorf("-mcp %s: %w", path, err)
	}
	c.Path = path
	return c, nil
}

// ParseMCPConfig parses an mcpServers configuration. Each server needs a command or a URL
// (not both); its transport must be known (MCPServer.Transport).
func ParseMCPConfig(b []byte) (*MCPConfig, error) {
	var f struct {
		MCPServers map[string]MCPServer `json:"mcpServers"`
		Servers    map[string]MCPServer `json:"servers"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	c := &MCPConfig{Servers: f.MCPServers}
	if c.Servers == nil {
		c.Servers = f.Servers
	}
	if len(c.Servers) == 0 {
		return nil, errors.New(`no servers: want {"mcpServers": {"name": {"command": ..., "args": [...]} or {"url": ...}}}`)
	}
	for _, name := range c.Names() {
		if _, err := c.Servers[name].Transport(); err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
	}
	return c, nil
}

// Names returns the names of the servers not disabled, sorted.
func (c *MCPConfig) Names() []string {
	var out []string
	for n, s := range c.Servers {
		if !s.Disabled {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Transport returns how s is reached: "stdio", "http" (streamable HTTP) or "sse".
func (s MCPServer) Transport() (string, error) {
	switch strings.ToLower(s.Type) {
	case "":
	case "stdio":
		if s.Command == "" {
			return "", errors.New(`type "stdio" needs a "command"`)
		}
		return "stdio", nil
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		if s.URL == "" {
			return "", fmt.Errorf("type %q needs a \"url\"", s.Type)
		}
		return "http", nil
	case "sse":
		if s.URL == "" {
			return "", errors.New(`type "sse" needs a "url"`)
		}
		return "sse", nil
	default:
		return "", fmt.Errorf("unknown type %q (stdio, http, sse)", s.Type)
	}
	switch {
	case s.Command != "" && s.URL != "":
		return "", errors.New(`both "command" and "url": give one`)
	case s.Command != "":
		return "stdio", nil
	case s.URL != "":
		return "http", nil
	}
	return "", errors.New(`neither "command" nor "url"`)
}

var varRE = regexp.MustCompile(`\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}`)

// Expand replaces ${VAR} and ${env:VAR} in s with the environment's values; a variable that
// is not set is an error naming it (values are never put into errors).
func Expand(s string) (string, error) {
	var missing []string
	out := varRE.ReplaceAllStringFunc(s, func(m string) string {
		name := varRE.FindStringSubmatch(m)[1]
		v, ok := os.LookupEnv(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable %s is not set", strings.Join(missing, ", "))
	}
	return out, nil
}

func expandMap(m map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(m))
	for k, v := range m {
		x, err := Expand(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = x
	}
	return out, nil
}

// Connect starts (stdio) or reaches (HTTP) MCP server s, named name, and initialises an MCP
// session with it; opts may be nil. A stdio server runs in a process group of its own;
// closing the session (or its connection failing) stops the whole group, so that what the
// command started (npx's node, a shell wrapper's children) ends with it. A stdio server's
// standard error is kept (the last 4 KiB) for the error when it fails to start. The session
// records its tools/list answers as the server sent them, so that SessionTools keeps their
// schemas' property order and their annotations as they are.
func Connect(ctx context.Context, name string, s MCPServer, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	tr, err := s.Transport()
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: %w", name, err)
	}
	var t mcp.Transport
	var stderr *tailBuffer
	raw := &rawTools{}
	switch tr {
	case "stdio":
		args := make([]string, len(s.Args))
		for i, a := range s.Args {
			if args[i], err = Expand(a); err != nil {
				return nil, fmt.Errorf("MCP server %q: args: %w", name, err)
			}
		}
		env, err := expandMap(s.Env)
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: env %w", name, err)
		}
		cmd := exec.Command(s.Command, args...)
		cmd.Dir = s.Cwd
		cmd.Env = os.Environ()
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		stderr = &tailBuffer{max: 4096}
		cmd.Stderr = stderr
		t = recordingTransport{newGroupTransport(cmd), raw}
	case "http", "sse":
		u, err := Expand(s.URL)
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: url: %w", name, err)
		}
		h, err := expandMap(s.Headers)
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: headers %w", name, err)
		}
		hc := &http.Client{Transport: headerTransport{h, http.DefaultTransport}}
		if tr == "sse" {
			t = recordingTransport{&mcp.SSEClientTransport{Endpoint: u, HTTPClient: hc}, raw}
		} else {
			hc.Transport = recordingRoundTripper{raw, hc.Transport}
			t = &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: hc, DisableStandaloneSSE: opts == nil || opts.ToolListChangedHandler == nil}
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "toolret", Version: "import"}, opts)
	cs, err := c.Connect(ctx, t, nil)
	if err != nil {
		if tail := stderr.String(); tail != "" {
			err = fmt.Errorf("%w; its standard error ends: %s", err, tail)
		}
		return nil, fmt.Errorf("MCP server %q (%s): %w", name, tr, err)
	}
	sessionRaw.Store(cs, raw)
	go func() {
		cs.Wait()
		sessionRaw.Delete(cs)
	}()
	return cs, nil
}

// stopGrace is how long a stdio server is given to exit after its standard input is closed,
// and then after SIGTERM, before its process group is sent SIGKILL.
var stopGrace = 2 * time.Second

// groupTransport runs a stdio MCP server as the leader of a process group of its own and
// stops the whole group when the connection closes.
type groupTransport struct {
	cmd   *exec.Cmd
	inner *mcp.CommandTransport
}

func newGroupTransport(cmd *exec.Cmd) *groupTransport {
	setProcessGroup(cmd)
	// Wait returns this long after the server exits even when a process that left the group
	// still holds its standard error.
	cmd.WaitDelay = stopGrace
	return &groupTransport{cmd: cmd, inner: &mcp.CommandTransport{Command: cmd, TerminateDuration: stopGrace}}
}

func (t *groupTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &groupConn{Connection: c, pgid: t.cmd.Process.Pid}, nil
}

// groupConn is the connection to a stdio server started by groupTransport.
type groupConn struct {
	mcp.Connection
	pgid int
	once sync.Once
	err  error
}

// Close closes the server's standard input and gives it stopGrace to exit (the MCP stdio
// shutdown), then stops what is left of its process group: SIGTERM, and SIGKILL after
// stopGrace. It may be called more than once.
func (c *groupConn) Close() error {
	c.once.Do(func() {
		done := make(chan error, 1)
		go func() { done <- c.Connection.Close() }()
		select {
		case c.err = <-done:
			// The server exited; what it started may not have.
			if err := stopProcessGroup(c.pgid, stopGrace); err != nil && c.err == nil {
				c.err = err
			}
		case <-time.After(stopGrace):
			gerr := stopProcessGroup(c.pgid, stopGrace)
			c.err = <-done
			var exit *exec.ExitError
			if errors.As(c.err, &exit) {
				c.err = nil // the signal that stopped it was ours
			}
			if gerr != nil {
				c.err = errors.Join(c.err, gerr)
			}
		}
	})
	return c.err
}

// headerTransport adds configured headers to every request.
type headerTransport struct {
	h    map[string]string
	next http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.h {
			r.Header.Set(k, v)
		}
	}
	return t.next.RoundTrip(r)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(bytes.ToValidUTF8(t.b, nil)))
}
