package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret/library"
)

// DefaultMCPTimeout bounds connecting to one MCP server and listing its tools.
const DefaultMCPTimeout = 60 * time.Second

var badNamespaceChar = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// Namespace returns the namespace of MCP server name: name with every character other than
// letters, digits, '_' and '-' replaced by '_'.
func Namespace(name string) string { return badNamespaceChar.ReplaceAllString(name, "_") }

// MCP imports the tools of the servers of cfg (every server not disabled when names is
// empty), connecting to them concurrently, each within timeout (0: DefaultMCPTimeout). It
// returns the tools of the servers that answered, in server-name order, with a report for
// each of them, and an error naming every server that failed: a re-import can then keep a
// failed server's tools (library.Merge covers only the reports' groups).
func MCP(ctx context.Context, cfg *MCPConfig, names []string, timeout time.Duration) ([]library.Tool, []Report, error) {
	if len(names) == 0 {
		names = cfg.Names()
	}
	if timeout <= 0 {
		timeout = DefaultMCPTimeout
	}
	type result struct {
		tools []library.Tool
		r     Report
		err   error
	}
	res := make([]result, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		s, ok := cfg.Servers[name]
		if !ok {
			res[i].err = fmt.Errorf("MCP server %q: not in %s", name, cfg.Path)
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			res[i].tools, res[i].r, res[i].err = MCPServerTools(ctx, name, s, cfg.Path)
		})
	}
	wg.Wait()
	var tools []library.Tool
	var reports []Report
	var errs []error
	seen := map[string]string{}
	for i, x := range res {
		if x.err == nil {
			if prev, dup := seen[x.r.Name]; dup {
				x.err = fmt.Errorf("MCP server %q: its namespace %q is also server %q's", names[i], x.r.Name, prev)
			}
		}
		if x.err != nil {
			errs = append(errs, x.err)
			continue
		}
		seen[x.r.Name] = names[i]
		tools = append(tools, x.tools...)
		reports = append(reports, x.r)
	}
	return tools, reports, errors.Join(errs...)
}

// MCPServerTools connects to MCP server s named name (Connect), lists its tools and closes
// the session. origin (the configuration file) is recorded in each tool's Source.
func MCPServerTools(ctx context.Context, name string, s MCPServer, origin string) ([]library.Tool, Report, error) {
	start := time.Now()
	tr, err := s.Transport()
	if err != nil {
		return nil, Report{}, fmt.Errorf("MCP server %q: %w", name, err)
	}
	cs, err := Connect(ctx, name, s, nil)
	if err != nil {
		return nil, Report{}, err
	}
	tools, r, err := SessionTools(ctx, cs, name, tr, origin)
	if cerr := cs.Close(); err == nil && cerr != nil && tr != "stdio" {
		err = fmt.Errorf("MCP server %q: closing the session: %w", name, cerr)
	}
	r.Elapsed = time.Since(start)
	return tools, r, err
}

// SessionTools lists every tool of the MCP session cs (tools/list, following the pagination
// cursor) as tools of namespace Namespace(server). A tool whose input schema does not
// compile as JSON Schema is skipped with the reason. On a session made by Connect, the
// schemas and annotations are kept as the server sent them (properties in their order,
// only the hints sent); on another, as the SDK decoded them.
func SessionTools(ctx context.Context, cs *mcp.ClientSession, server, transport, origin string) ([]library.Tool, Report, error) {
	ns := Namespace(server)
	r := Report{Kind: library.KindMCP, Name: ns, Origin: origin, Group: library.GroupOf(library.KindMCP, ns)}
	if ns != server {
		r.note("server %q: namespace %q", server, ns)
	}
	var tools []library.Tool
	seen := map[string]bool{}
	raw := rawToolsOf(cs)
	for mt, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, r, fmt.Errorf("MCP server %q: tools/list: %w", server, err)
		}
		if mt == nil || mt.Name == "" {
			r.skip("a tool", "no name")
			continue
		}
		if seen[mt.Name] {
			r.skip(mt.Name, "listed twice")
			continue
		}
		rt, sent := raw.get(mt.Name)
		t, err := mcpTool(mt, rt, sent, ns, server, transport, origin)
		if err != nil {
			r.skip(mt.Name, err.Error())
			continue
		}
		seen[mt.Name] = true
		tools = append(tools, t)
	}
	r.Tools = len(tools)
	return tools, r, nil
}

// mcpTool converts mt. When sent, its schemas and annotations are rt's, the tool as the
// server sent it, else mt's, as the SDK decoded them.
func mcpTool(mt *mcp.Tool, rt rawTool, sent bool, ns, server, transport, origin string) (library.Tool, error) {
	t := library.Tool{Name: mt.Name, Namespace: ns, Title: mt.Title, Description: mt.Description,
		Source: library.Source{Kind: library.KindMCP, Origin: origin, Server: server, Transport: transport}}
	if t.Title == "" && mt.Annotations != nil {
		t.Title = mt.Annotations.Title
	}
	if sent {
		t.InputSchema, t.OutputSchema, t.Annotations = sentJSON(rt.InputSchema), sentJSON(rt.OutputSchema), sentJSON(rt.Annotations)
	} else {
		var err error
		if t.InputSchema, err = rawJSON(mt.InputSchema); err != nil {
			return t, fmt.Errorf("input schema: %w", err)
		}
		if t.OutputSchema, err = rawJSON(mt.OutputSchema); err != nil {
			return t, fmt.Errorf("output schema: %w", err)
		}
		if mt.Annotations != nil {
			if t.Annotations, err = rawJSON(mt.Annotations); err != nil {
				return t, fmt.Errorf("annotations: %w", err)
			}
		}
	}
	if len(t.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if _, err := library.CompileSchema(t.InputSchema); err != nil {
		return t, fmt.Errorf("input schema: %w", err)
	}
	if len(t.OutputSchema) > 0 {
		if _, err := library.CompileSchema(t.OutputSchema); err != nil {
			return t, fmt.Errorf("output schema: %w", err)
		}
	}
	return t, nil
}

// sentJSON returns raw, a value as a server sent it, compacted (library.Write's form), nil
// for an absent value or null.
func sentJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	c, err := compactJSON(raw)
	if err != nil || string(c) == "null" {
		return nil
	}
	return c
}

// rawJSON returns v as compact JSON (library.Write's form), nil for nil.
func rawJSON(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return nil, nil
	}
	return compactJSON(b)
}
