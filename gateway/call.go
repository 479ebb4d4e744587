package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret/library"
)

// ErrUnknownTool is the error of calling a tool the library does not have.
var ErrUnknownTool = errors.New("no tool")

// Call validates args (a JSON object) against the input schema of the tool called name
// (Tool) and calls it through its upstream. The error is the request's fault: ErrUnknownTool
// or an *ArgumentError naming each failing field. A fault of the upstream (unreachable,
// crashed, hung, malformed answer, HTTP error) is a result with IsError set saying what
// happened. key names the API key of the caller and searchID the search that showed the tool
// (either may be empty), for the usage log.
func (g *Gateway) Call(ctx context.Context, name string, args json.RawMessage, key, searchID string) (res *mcp.CallToolResult, err error) {
	start := time.Now()
	st := g.lib.Load()
	t, ok := st.tool(name)
	if !ok {
		err = fmt.Errorf("%w %q in the library: search_tools (POST /v1/search) gives the names of its tools", ErrUnknownTool, name)
		g.logCall(name, key, searchID, nil, err, start)
		return nil, err
	}
	if err := validate(st, t, args); err != nil {
		g.logCall(t.ID(), key, searchID, nil, err, start)
		return nil, err
	}
	m := map[string]any{}
	if len(bytes.TrimSpace(args)) > 0 && string(args) != "null" {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, &ArgumentError{Tool: t.ID(), Problems: []string{"arguments must be a JSON object"}}
		}
	}
	defer func() {
		if p := recover(); p != nil {
			g.log.Error("call failed inside the gateway", "tool", t.ID(), "panic", fmt.Sprint(p))
			res, err = toolError("tool %s: the gateway failed calling it (an internal error; it keeps serving)", t.ID()), nil
		}
		g.logCall(t.ID(), key, searchID, res, err, start)
	}()
	switch t.Source.Kind {
	case library.KindMCP:
		res = g.callMCP(ctx, t, m)
	case library.KindOpenAPI:
		res = g.callOpenAPI(ctx, t, m)
	default:
		res = toolError("tool %s comes from a %s list (%s): it has no upstream the gateway can call; the agent's own runtime runs it", t.ID(), t.Source.Kind, t.Source.Origin)
	}
	return res, nil
}

// Callable reports whether the gateway can call t: an upstream of its configuration serves it.
func (g *Gateway) Callable(t *library.Tool) bool {
	switch t.Source.Kind {
	case library.KindMCP:
		_, ok := g.mcp[t.Source.Server]
		return ok
	case library.KindOpenAPI:
		if g.up == nil {
			return false
		}
		_, ok := g.up.OpenAPI[t.Namespace]
		return ok
	}
	return false
}

// resultText joins the text contents of res.
func resultText(res *mcp.CallToolResult) string {
	var b bytes.Buffer
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// CallTimeout is the time limit of one call.
func (g *Gateway) CallTimeout() time.Duration { return g.callTimeout() }
