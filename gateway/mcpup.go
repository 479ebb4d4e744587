package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/library/importer"
)

// mcpUpstream is one MCP server of the configuration: a live session, started (stdio) or
// reached (HTTP) on first need and kept; when it ends (the process died, the connection
// broke) it is reconnected in the background with backoff.
type mcpUpstream struct {
	g         *Gateway
	name      string
	transport string // "stdio", "http" or "sse", set on the first connection

	mu       sync.Mutex
	cs       *mcp.ClientSession
	since    time.Time
	restarts int
	backoff  time.Duration
	timer    *time.Timer
	closed   bool
}

const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// session returns the live session, connecting when there is none.
func (u *mcpUpstream) session(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil, fmt.Errorf("MCP server %q: the gateway is shutting down", u.name)
	}
	if u.cs != nil {
		return u.cs, nil
	}
	s, err := u.g.up.mcpServer(u.name)
	if err != nil {
		return nil, err
	}
	opts := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		u.g.refreshAsync(u.name, "notifications/tools/list_changed")
	}}
	u.transport, _ = s.Transport()
	cs, err := importer.Connect(ctx, u.name, s, opts)
	if err != nil {
		return nil, errors.New(u.g.up.Redact(err.Error()))
	}
	u.cs, u.since = cs, time.Now()
	u.g.log.Info("upstream MCP server connected", "server", u.name, "restarts", u.restarts)
	go u.watch(cs)
	return cs, nil
}

// watch waits for cs to end and reconnects unless the gateway is closing.
func (u *mcpUpstream) watch(cs *mcp.ClientSession) {
	err := cs.Wait()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != cs {
		return
	}
	u.cs = nil
	if u.closed {
		return
	}
	u.restarts++
	if time.Since(u.since) > time.Minute || u.backoff == 0 {
		u.backoff = minBackoff
	} else {
		u.backoff = min(2*u.backoff, maxBackoff)
	}
	msg := "the session ended"
	if err != nil {
		msg = u.g.up.Redact(err.Error())
	}
	u.g.log.Warn("upstream MCP server gone; reconnecting", "server", u.name, "reason", msg, "in", u.backoff.String(), "restarts", u.restarts)
	u.timer = time.AfterFunc(u.backoff, u.reconnect)
}

// reconnect restores the session in the background; after a restart the server's tools are
// re-imported (they may have changed while it was down).
func (u *mcpUpstream) reconnect() {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if _, err := u.session(ctx); err != nil {
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.closed || u.cs != nil {
			return
		}
		u.backoff = min(2*max(u.backoff, minBackoff), maxBackoff)
		u.g.log.Warn("reconnecting upstream MCP server failed", "server", u.name, "error", u.g.up.Redact(err.Error()), "retry_in", u.backoff.String())
		u.timer = time.AfterFunc(u.backoff, u.reconnect)
		return
	}
	u.g.refreshAsync(u.name, "restart")
}

// drop ends session cs (a hung server: a stdio child is killed) so that it is reconnected.
func (u *mcpUpstream) drop(cs *mcp.ClientSession) {
	cs.Close() // watch sees it end and reconnects
}

func (u *mcpUpstream) close() {
	u.mu.Lock()
	u.closed = true
	cs := u.cs
	if u.timer != nil {
		u.timer.Stop()
	}
	u.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
}

// callMCP forwards a call of tool t to its upstream MCP server. Faults of the upstream are
// tool errors (isError) saying what happened.
func (g *Gateway) callMCP(ctx context.Context, t *library.Tool, args map[string]any) *mcp.CallToolResult {
	u, ok := g.mcp[t.Source.Server]
	if !ok {
		return toolError("tool %s: its MCP server %q is not an upstream of the gateway's configuration (-upstreams %s): calls go only to configured upstreams", t.ID(), t.Source.Server, g.upPath())
	}
	timeout := g.callTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cs, err := u.session(ctx)
	if err != nil {
		return toolError("tool %s: upstream MCP server %q is unavailable: %s", t.ID(), u.name, g.up.Redact(err.Error()))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: t.Name, Arguments: args})
	if err == nil {
		if res == nil {
			return toolError("tool %s: upstream MCP server %q answered no result", t.ID(), u.name)
		}
		return res
	}
	var werr *jsonrpc.Error
	u.mu.Lock()
	tr := u.transport
	u.mu.Unlock()
	if ctx.Err() == nil && tr != "stdio" && !(errors.As(err, &werr) && werr.Code != codeRejected) {
		// A broken HTTP session (the server restarted and forgot it, a proxy failed): start
		// a new one for the next call.
		u.drop(cs)
	}
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		// A server that does not answer a ping either is hung: restart it.
		go func() {
			pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if cs.Ping(pctx, nil) != nil {
				g.log.Warn("upstream MCP server hung: restarting it", "server", u.name)
				u.drop(cs)
			}
		}()
		return toolError("tool %s: upstream MCP server %q did not answer within %v (the gateway's call timeout); the call was cancelled", t.ID(), u.name, timeout)
	case ctx.Err() != nil:
		return toolError("tool %s: the call was cancelled", t.ID())
	case errors.Is(err, mcp.ErrConnectionClosed) || isClosed(err):
		return toolError("tool %s: upstream MCP server %q closed the connection during the call (it crashed, exited or sent malformed JSON-RPC); it is being restarted: the call may be retried", t.ID(), u.name)
	case isMalformed(err):
		return toolError("tool %s: upstream MCP server %q answered malformed JSON-RPC: %s", t.ID(), u.name, g.up.Redact(err.Error()))
	case errors.As(err, &werr) && werr.Code != codeRejected:
		return toolError("tool %s: upstream MCP server %q answered with an error (code %d): %s", t.ID(), u.name, werr.Code, g.up.Redact(werr.Message))
	}
	return toolError("tool %s: upstream MCP server %q failed: %s", t.ID(), u.name, g.up.Redact(err.Error()))
}

// codeRejected is the JSON-RPC code the MCP SDK gives a request its transport failed to
// deliver (an HTTP error status): the wrapped error says more.
const codeRejected = -32005

func isMalformed(err error) bool {
	s := err.Error()
	return strings.Contains(s, "invalid character") || strings.Contains(s, "unmarshaling jsonrpc") || strings.Contains(s, "failed to decode") ||
		strings.Contains(s, "unexpected end of JSON")
}

func isClosed(err error) bool {
	s := err.Error()
	return strings.Contains(s, "connection closed") || strings.Contains(s, "EOF") || strings.Contains(s, "broken pipe") || strings.Contains(s, "client is closing")
}

func (g *Gateway) callTimeout() time.Duration {
	if g.up != nil && g.up.CallTimeout > 0 {
		return g.up.CallTimeout
	}
	return DefaultCallTimeout
}

func (g *Gateway) upPath() string {
	if g.up == nil {
		return "not given"
	}
	return g.up.Path
}

// toolError is a tool result with isError set and the message as its text.
func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}
