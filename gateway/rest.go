package gateway

import (
	_ "embed"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/serve"
)

//go:embed openapi.json
var openapiDoc []byte

// OpenAPIDocument is the OpenAPI 3.1 description of the gateway's REST API (GET /openapi.json).
func OpenAPIDocument() []byte { return openapiDoc }

// CallResult answers POST /v1/call: the tool's result as MCP gives it (content,
// structured_content, is_error), and its text contents joined (text) for a client that
// passes the result on to a model as a function's output.
type CallResult struct {
	Name              string            `json:"name"`
	IsError           bool              `json:"is_error"`
	Text              string            `json:"text"`
	Content           []json.RawMessage `json:"content"`
	StructuredContent any               `json:"structured_content,omitempty"`
	Meta              map[string]any    `json:"_meta,omitempty"`
}

// ToolDetail answers GET /v1/tools/{name}: the definition and the index record (id, text,
// hierarchy) of the tool, from library version Version.
type ToolDetail struct {
	Version   uint64           `json:"version"`
	ID        string           `json:"id"`
	Text      string           `json:"text,omitempty"`
	Hierarchy *serve.Hierarchy `json:"hierarchy,omitempty"`
	Definition
}

// ToolList answers GET /v1/tools.
type ToolList struct {
	Version uint64       `json:"library_version"`
	Total   int          `json:"total"`
	Offset  int          `json:"offset"`
	Tools   []Definition `json:"tools"`
}

// Routes registers the gateway's REST endpoints (serve.Extension).
func (g *Gateway) Routes(r *serve.Router) {
	cfg := r.Config()
	r.Handle(serve.Route{Pattern: "POST /v1/search", Name: "search", Scope: serve.ScopeSearch, Handler: func(w http.ResponseWriter, req *http.Request) (any, error) {
		var in SearchInput
		if err := r.ReadJSON(w, req, &in); err != nil {
			return nil, err
		}
		k := g.opts.K
		if in.K != nil {
			k = *in.K
		}
		if k < 1 || k > g.opts.MaxK {
			return nil, serve.Errorf(http.StatusBadRequest, `"k" = %d: must be between 1 and %d (-max-k)`, k, g.opts.MaxK)
		}
		res, err := g.Search(req.Context(), in.Query, k, in.Filters, serve.KeyName(req))
		if errors.Is(err, ErrBadSearch) {
			return nil, serve.Errorf(http.StatusBadRequest, "%s", strings.TrimPrefix(err.Error(), ErrBadSearch.Error()+": "))
		}
		if err != nil {
			return nil, err
		}
		serve.SetItems(req, len(res.Tools), res.Version)
		return res, nil
	}})
	r.Handle(serve.Route{Pattern: "GET /v1/tools", Name: "tools_list", Scope: serve.ScopeSearch, Handler: func(w http.ResponseWriter, req *http.Request) (any, error) {
		q := req.URL.Query()
		f := &Filters{Server: q.Get("server"), Namespace: q.Get("namespace"), Tags: q["tag"]}
		offset, limit := 0, 100
		for name, p := range map[string]*int{"offset": &offset, "limit": &limit} {
			if s := q.Get(name); s != "" {
				n, err := strconv.Atoi(s)
				if err != nil || n < 0 || (name == "limit" && (n < 1 || n > 1000)) {
					return nil, serve.Errorf(http.StatusBadRequest, "%s=%q: want an integer (limit 1 to 1000, offset from 0)", name, s)
				}
				*p = n
			}
		}
		tools, total := g.List(f, offset, limit)
		return &ToolList{Version: g.store.R.Library().Version, Total: total, Offset: offset, Tools: tools}, nil
	}})
	getTool := func(w http.ResponseWriter, req *http.Request) (any, error) {
		// An ID with slashes (GitHub's "github.issues/list-for-repo") needs no escaping: the
		// second pattern takes what follows the first segment.
		name := req.PathValue("id")
		if rest := req.PathValue("rest"); name == "" {
			name = req.PathValue("first") + "/" + rest
		}
		lib := g.store.R.Library()
		out := &ToolDetail{Version: lib.Version}
		t, ok := g.Tool(name)
		if ok {
			out.Definition = g.Define(t)
			name = t.ID()
		}
		i, inIndex := lib.Lookup(name)
		if !ok && !inIndex {
			return nil, serve.Errorf(http.StatusNotFound, "no tool %q in the library (version %d)", name, lib.Version)
		}
		out.ID = name
		if inIndex {
			rec := lib.Tool(i)
			out.Text = rec.Text
			if !ok {
				out.Definition = Definition{Name: rec.ID, ClientName: library.ClientName(rec.ID), ToolName: rec.ID, Title: rec.Title, InputSchema: json.RawMessage(`{"type":"object"}`)}
			}
			if rec.Category != "" || rec.ToolName != "" || rec.APIName != "" {
				out.Hierarchy = &serve.Hierarchy{Category: rec.Category, Tool: rec.ToolName, API: rec.APIName}
			}
		}
		return out, nil
	}
	// Two patterns, as the server's own "/v1/tools/{id}" (other methods) would conflict with
	// "GET /v1/tools/{id...}".
	r.Handle(serve.Route{Pattern: "GET /v1/tools/{id}", Name: "tools_get", Scope: serve.ScopeSearch, Handler: getTool})
	r.Handle(serve.Route{Pattern: "GET /v1/tools/{first}/{rest...}", Name: "tools_get", Scope: serve.ScopeSearch, Handler: getTool})
	r.Handle(serve.Route{Pattern: "POST /v1/call", Name: "call", Scope: serve.ScopeCall, Timeout: g.callTimeout() + cfg.Timeout, Handler: func(w http.ResponseWriter, req *http.Request) (any, error) {
		var in CallInput
		if err := r.ReadJSON(w, req, &in); err != nil {
			return nil, err
		}
		if in.Name == "" {
			return nil, serve.Errorf(http.StatusBadRequest, `missing "name": the tool to call, as POST /v1/search gave it`)
		}
		res, err := g.Call(req.Context(), in.Name, in.Arguments, serve.KeyName(req), in.SearchID)
		var ae *ArgumentError
		switch {
		case errors.Is(err, ErrUnknownTool):
			return nil, serve.Errorf(http.StatusNotFound, "%v", err)
		case errors.As(err, &ae):
			return nil, serve.Errorf(http.StatusBadRequest, "%v", err)
		case err != nil:
			return nil, err
		}
		serve.SetItems(req, 1, 0)
		out := &CallResult{Name: in.Name, IsError: res.IsError, Text: resultText(res), Content: []json.RawMessage{}, StructuredContent: res.StructuredContent, Meta: res.Meta}
		if t, ok := g.Tool(in.Name); ok {
			out.Name = t.ID()
		}
		for _, c := range res.Content {
			b, err := json.Marshal(c)
			if err != nil {
				return nil, err
			}
			out.Content = append(out.Content, b)
		}
		return out, nil
	}})
	r.Handle(serve.Route{Pattern: "POST /v1/feedback", Name: "feedback", Scope: serve.ScopeCall, Handler: func(w http.ResponseWriter, req *http.Request) (any, error) {
		var in ReportInput
		if err := r.ReadJSON(w, req, &in); err != nil {
			return nil, err
		}
		if in.Success == nil {
			return nil, serve.Errorf(http.StatusBadRequest, `missing "success": true or false`)
		}
		err := g.Feedback(in.Name, in.SearchID, in.Query, *in.Success, in.Note, serve.KeyName(req))
		switch {
		case errors.Is(err, ErrUnknownTool):
			return nil, serve.Errorf(http.StatusNotFound, "%v", err)
		case errors.Is(err, ErrUsageUnavailable):
			return nil, serve.Errorf(http.StatusServiceUnavailable, "%v", err)
		case err != nil:
			return nil, serve.Errorf(http.StatusBadRequest, "%v", err)
		}
		return map[string]any{"recorded": true}, nil
	}})
	g.adminRoutes(r)
	r.Handle(serve.Route{Pattern: "GET /openapi.json", Name: "openapi", Handler: func(w http.ResponseWriter, req *http.Request) (any, error) {
		return json.RawMessage(openapiDoc), nil
	}})
}
