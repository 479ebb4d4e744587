package serve

import (
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Extension adds HTTP endpoints and MCP tools to a server (Config.Extension): the tool
// gateway (package gateway) is one.
type Extension interface {
	// Routes registers the extension's endpoints. They are registered before the server's
	// own: a pattern the extension registers replaces the server's endpoint of that pattern.
	Routes(r *Router)
	// MCPTools adds the extension's tools to the server's MCP server (HTTP and stdio).
	MCPTools(s *mcp.Server)
}

// HandlerFunc answers a request with a value sent as JSON (status 200) or an error: one
// made by Errorf keeps its status, any other is a 500.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) (any, error)

// Route is an endpoint of an extension.
type Route struct {
	// Pattern is an http.ServeMux pattern ("POST /v1/search"); Name names the route in
	// logs and metrics.
	Pattern, Name string
	// Scope is the API-key scope the route needs (ScopeSearch, ScopeCall, ScopeAdmin; ""
	// for none).
	Scope string
	// Timeout bounds a request (0: Config.Timeout).
	Timeout time.Duration
	Handler HandlerFunc
}

// Router registers an extension's routes with a Server.
type Router struct{ s *Server }

// Handle registers rt with the server's request limits, access checks, JSON errors, metrics
// and log line.
func (r *Router) Handle(rt Route) {
	h := rt.Handler
	r.s.routeScope(rt.Pattern, rt.Name, rt.Scope, rt.Timeout, func(w http.ResponseWriter, req *http.Request) (any, *apiError) {
		v, err := h(w, req)
		if err == nil {
			return v, nil
		}
		var ae *apiError
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, internal(req, err)
	})
	r.s.own[rt.Pattern] = true
}

// Config returns the server's configuration (limits and defaults applied).
func (r *Router) Config() Config { return r.s.cfg }

// ReadJSON reads the request body, at most Config.MaxBody bytes, into v: valid UTF-8, one
// JSON object, no unknown fields; the error (Errorf) says what is wrong.
func (r *Router) ReadJSON(w http.ResponseWriter, req *http.Request, v any) error {
	if aerr := readJSON(w, req, r.s.cfg.MaxBody, v); aerr != nil {
		return aerr
	}
	return nil
}

// Errorf returns an error answered with status and the formatted message as {"error": ...}.
func Errorf(status int, format string, args ...any) error { return errorf(status, format, args...) }

// Status returns the HTTP status of err: its own when Errorf made it, else 500.
func Status(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status
	}
	return http.StatusInternalServerError
}

// KeyName returns the name of the API key that sent r ("" when none).
func KeyName(r *http.Request) string { return info(r).key }

// SetItems records in r's log line how many items it had and the library version answered.
func SetItems(r *http.Request, items int, version uint64) {
	i := info(r)
	i.items, i.version = items, version
}
