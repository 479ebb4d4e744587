package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/serve"
	"github.com/toolret/toolret/toolindex/store"
)

// ErrNotCallable is the error of adding a tool the gateway could not call (Put).
var ErrNotCallable = errors.New("not callable")

// invalidError is a change refused for what it asked (HTTP 400).
type invalidError struct{ error }

func (e invalidError) Unwrap() error { return e.error }

// ToolsInput is the body of POST /v1/tools in gateway mode: tool definitions as the library
// file holds them (toolret import), one object per tool.
type ToolsInput struct {
	Tools []json.RawMessage `json:"tools"`
}

// UpdateResult answers POST /v1/tools and DELETE /v1/tools/{name} in gateway mode.
type UpdateResult struct {
	Version     uint64   `json:"library_version"`
	LibrarySize int      `json:"library_size"`
	Added       []string `json:"added,omitempty"`
	Replaced    []string `json:"replaced,omitempty"`
	Deleted     []string `json:"deleted,omitempty"`
	// Embedded counts the tools embedded for the change.
	Embedded int `json:"embedded"`
}

// Put adds tools to the library, or replaces the tools of the same IDs, as one change
// (apply: the library file rewritten atomically, the index's update log, the replicas).
// Each tool must be one the gateway can serve: an MCP tool of a configured upstream that
// lists it (tools/list), an OpenAPI operation of a configured OpenAPI upstream (its
// namespace), or a function (kind "functions": found by searches, run by the agent's own
// runtime, as an imported function list). Any other is refused with ErrNotCallable, saying
// why: a tool found by searches that no call can reach would only mislead the agent.
func (g *Gateway) Put(ctx context.Context, tools []library.Tool) (Update, error) {
	if len(tools) == 0 {
		return Update{}, invalidError{errors.New("no tools to put")}
	}
	seen := map[string]int{}
	for i := range tools {
		t := &tools[i]
		if err := t.Check(); err != nil {
			return Update{}, invalidError{fmt.Errorf("tools[%d]: %w", i, err)}
		}
		if j, dup := seen[t.ID()]; dup {
			return Update{}, invalidError{fmt.Errorf("tools[%d]: tool %q repeats tools[%d]", i, t.ID(), j)}
		}
		seen[t.ID()] = i
		if err := g.servable(ctx, t); err != nil {
			return Update{}, fmt.Errorf("tools[%d]: %w", i, err)
		}
	}
	g.libMu.Lock()
	defer g.libMu.Unlock()
	old := g.Library()
	next := &library.Library{Template: old.Template, Tools: slices.Clone(old.Tools)}
	at := old.Index()
	for _, t := range tools {
		if i, ok := at[t.ID()]; ok {
			next.Tools[i] = t
		} else {
			next.Tools = append(next.Tools, t)
		}
	}
	return g.apply(next, true, "admin API")
}

// servable reports why the gateway could not call t (nil: it can).
func (g *Gateway) servable(ctx context.Context, t *library.Tool) error {
	switch t.Source.Kind {
	case library.KindFunctions:
		return nil
	case library.KindOpenAPI:
		if !g.Callable(t) {
			return fmt.Errorf("%w: tool %s is an OpenAPI operation of namespace %q, which is not an OpenAPI upstream of the gateway's configuration (-upstreams %s): it could be found but never called", ErrNotCallable, t.ID(), t.Namespace, g.upPath())
		}
		if t.Source.Method == "" || t.Source.Path == "" {
			return fmt.Errorf("%w: tool %s is an OpenAPI operation without source.method and source.path: the gateway would not know which request to send", ErrNotCallable, t.ID())
		}
		return nil
	case library.KindMCP:
		u, ok := g.mcp[t.Source.Server]
		if !ok {
			return fmt.Errorf("%w: tool %s names MCP server %q (source.server), which is not an upstream of the gateway's configuration (-upstreams %s): it could be found but never called", ErrNotCallable, t.ID(), t.Source.Server, g.upPath())
		}
		ctx, cancel := context.WithTimeout(ctx, g.callTimeout())
		defer cancel()
		cs, err := u.session(ctx)
		if err != nil {
			return fmt.Errorf("%w: tool %s: its MCP server %q is unavailable, so the tool cannot be checked: %s", ErrNotCallable, t.ID(), u.name, g.up.Redact(err.Error()))
		}
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return fmt.Errorf("%w: tool %s: listing the tools of MCP server %q: %s", ErrNotCallable, t.ID(), u.name, g.up.Redact(err.Error()))
			}
			if tool.Name == t.Name {
				return nil
			}
		}
		return fmt.Errorf("%w: tool %s: MCP server %q has no tool %q (tools/list): a call would fail", ErrNotCallable, t.ID(), u.name, t.Name)
	}
	return fmt.Errorf("%w: tool %s: unknown source kind %q", ErrNotCallable, t.ID(), t.Source.Kind)
}

// Delete removes the tool called name (Tool: its ID or client name) from the library, as one
// change (apply). The last tool is not removed.
func (g *Gateway) Delete(name string) (Update, error) {
	g.libMu.Lock()
	defer g.libMu.Unlock()
	st := g.lib.Load()
	t, ok := st.tool(name)
	if !ok {
		return Update{}, fmt.Errorf("%w %q in the library", ErrUnknownTool, name)
	}
	id := t.ID()
	old := st.lib
	next := &library.Library{Template: old.Template}
	for _, x := range old.Tools {
		if x.ID() != id {
			next.Tools = append(next.Tools, x)
		}
	}
	return g.apply(next, true, "admin API")
}

// adminRoutes registers POST /v1/tools and DELETE /v1/tools/{name} (scope admin), which in
// gateway mode change the library (Put, Delete) instead of the index alone.
func (g *Gateway) adminRoutes(r *serve.Router) {
	result := func(u Update) *UpdateResult {
		return &UpdateResult{Version: u.Version, LibrarySize: len(g.Library().Tools), Added: u.Added, Replaced: u.Changed, Deleted: u.Removed, Embedded: u.Embedded}
	}
	r.Handle(serve.Route{Pattern: "POST /v1/tools", Name: "tools_put", Scope: serve.ScopeAdmin, Timeout: g.callTimeout() + r.Config().Timeout, Handler: func(w http.ResponseWriter, req *http.Request) (any, error) {
		var in ToolsInput
		if err := r.ReadJSON(w, req, &in); err != nil {
			return nil, err
		}
		if len(in.Tools) == 0 {
			return nil, serve.Errorf(http.StatusBadRequest, `missing "tools": tool definitions as the library file holds them (name, namespace, description, input_schema, source)`)
		}
		if n := r.Config().MaxBatch; len(in.Tools) > n {
			return nil, serve.Errorf(http.StatusBadRequest, `"tools" has %d tools, more than the limit of %d (-max-batch)`, len(in.Tools), n)
		}
		tools := make([]library.Tool, len(in.Tools))
		for i, raw := range in.Tools {
			if err := decodeTool(raw, &tools[i]); err != nil {
				return nil, serve.Errorf(http.StatusBadRequest, `"tools"[%d]: %v`, i, err)
			}
		}
		u, err := g.Put(req.Context(), tools)
		if err != nil {
			return nil, serve.Errorf(updateStatus(err), "%v", err)
		}
		serve.SetItems(req, len(tools), u.Version)
		return result(u), nil
	}})
	del := func(w http.ResponseWriter, req *http.Request) (any, error) {
		name := req.PathValue("id")
		if rest := req.PathValue("rest"); name == "" {
			name = req.PathValue("first") + "/" + rest
		}
		u, err := g.Delete(name)
		if err != nil {
			return nil, serve.Errorf(updateStatus(err), "%v", err)
		}
		serve.SetItems(req, 1, u.Version)
		return result(u), nil
	}
	r.Handle(serve.Route{Pattern: "DELETE /v1/tools/{id}", Name: "tools_delete", Scope: serve.ScopeAdmin, Handler: del})
	r.Handle(serve.Route{Pattern: "DELETE /v1/tools/{first}/{rest...}", Name: "tools_delete", Scope: serve.ScopeAdmin, Handler: del})
}

// decodeTool decodes one tool definition strictly (unknown fields are errors); an index
// record ({"id", "text"}: the body of POST /v1/tools without a library) is told apart.
func decodeTool(raw json.RawMessage, t *library.Tool) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(t)
	if err == nil {
		return nil
	}
	var rec map[string]json.RawMessage
	if json.Unmarshal(raw, &rec) == nil && rec["id"] != nil && rec["text"] != nil && rec["name"] == nil {
		return errors.New(`an index record ({"id", "text"}) is not enough in gateway mode (-library): give the tool's definition as the library file holds it (name, namespace, description, input_schema, source) so that the gateway can also call it`)
	}
	return fmt.Errorf("not a tool definition as the library file holds it: %w", err)
}

// updateStatus is the HTTP status of a Put or Delete error.
func updateStatus(err error) int {
	switch {
	case errors.Is(err, ErrUnknownTool):
		return http.StatusNotFound
	case errors.Is(err, store.ErrFailed), errors.Is(err, store.ErrBusy):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrNotCallable):
		return http.StatusUnprocessableEntity
	case errors.Is(err, errEmptyLibrary):
		return http.StatusConflict
	case errors.As(err, new(invalidError)):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}
