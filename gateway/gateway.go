// Package gateway makes a toolret server an agent's tool gateway: MCP tools search_tools
// (full tool definitions, input schema included, from the trained retriever) and call_tool
// (arguments validated against the tool's JSON Schema, then forwarded to the upstream MCP
// server the tool came from, or performed as the OpenAPI operation over HTTP), with their REST
// equivalents POST /v1/search, GET /v1/tools[/{name}], POST /v1/call and the OpenAPI
// description of that API at GET /openapi.json. It plugs into package serve as a
// serve.Extension.
//
// Calls go only to the upstreams of the gateway's configuration (Upstreams); OpenAPI calls
// refuse private and loopback addresses unless it allows them; credentials come from the
// environment or a secrets file and are never logged or answered. An upstream that crashes,
// hangs, answers malformed JSON-RPC or an HTTP error gives the agent a tool error (isError)
// saying so, and the gateway keeps serving: stdio servers are restarted, HTTP sessions
// reconnected.
//
// The library is live (live.go): the library file rewritten (WatchLibrary), an upstream's
// notifications/tools/list_changed (Refresh) and the admin API in gateway mode (Put, Delete:
// POST and DELETE /v1/tools) change it, each through the store's fsynced update log (only new
// and changed tools embedded) and, with a LibraryDB, on every replica.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/toolindex/store"
)

// Options configure a Gateway.
type Options struct {
	// Library is the library served and LibraryPath its file, which WatchLibrary watches and
	// list_changed and the admin API rewrite; "" keeps them in memory only.
	Library     *library.Library
	LibraryPath string
	// Store is the live index of the library's tools (tool ID = library.Tool.ID).
	Store *store.Store
	// Upstreams configures the servers calls go to; nil: none (every call fails, saying so).
	Upstreams *Upstreams
	// UsageLog, when set, is the file every search and call is appended to (UsageRecord).
	UsageLog string
	// UsageDB, when set, is the database table the usage records go to instead
	// (pgstore.Store: replicas sharing a library share its usage log).
	UsageDB UsageDB
	// UsageSpool, with UsageDB, is the file where the searches and calls the database could
	// not take (it was unreachable) wait, fsynced, until they are written to it (every 2 s
	// and at start; at least once). "": they are lost, each logged as an error. Feedback is
	// never spooled: it fails with ErrUsageUnavailable so that the client knows.
	UsageSpool string
	// LibraryDB, when set, is the database the library is shared through by replicas
	// (pgstore.Store): its library is served, Library only seeds it (LibraryDB).
	LibraryDB LibraryDB
	// K is the number of tools a search gives when it asks for none (default 5), MaxK the
	// most it may ask for (default 100).
	K, MaxK int
	// Log receives the gateway's events; nil: slog.Default().
	Log *slog.Logger
}

// Gateway answers searches from a Store and calls tools through their upstreams.
type Gateway struct {
	opts    Options
	store   *store.Store
	up      *Upstreams
	log     *slog.Logger
	lib     atomic.Pointer[state]
	mcp     map[string]*mcpUpstream
	http    [2]*http.Client // [0]: public addresses only; [1]: private allowed
	usage   usageSink
	libMu   sync.Mutex // serialises library changes
	closed  atomic.Bool
	wg      sync.WaitGroup
	refresh refreshing
	stop    chan struct{}  // closed by Close: background work ends
	shared  *sharedLibrary // nil: the library is the file's alone
}

// state is one version of the library with its lookups.
type state struct {
	lib  *library.Library
	byID map[string]int
	// byName maps a tool's name to its index when no other tool has that name.
	byName map[string]int
	// client is each tool's client name (library.ClientNames); byClient maps it back.
	client   []string
	byClient map[string]int
	mu       sync.Mutex
	schemas  map[string]*jsonschema.Schema // compiled on first use
}

func newState(l *library.Library) *state {
	s := &state{lib: l, byID: l.Index(), byName: map[string]int{}, schemas: map[string]*jsonschema.Schema{}}
	dup := map[string]bool{}
	for i, t := range l.Tools {
		if _, ok := s.byName[t.Name]; ok {
			dup[t.Name] = true
		}
		s.byName[t.Name] = i
	}
	for n := range dup {
		delete(s.byName, n)
	}
	s.client = l.ClientNames()
	s.byClient = make(map[string]int, len(s.client))
	for i, n := range s.client {
		s.byClient[n] = i
	}
	return s
}

// New returns the gateway of opts.Library over opts.Store. Start connects its MCP
// upstreams; Close ends them.
func New(opts Options) (*Gateway, error) {
	if opts.Library == nil || opts.Store == nil {
		return nil, errors.New("gateway: a library and a store are needed")
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.MaxK <= 0 {
		opts.MaxK = 100
	}
	if opts.K <= 0 {
		opts.K = 5
	}
	opts.K = min(opts.K, opts.MaxK)
	g := &Gateway{opts: opts, store: opts.Store, up: opts.Upstreams, log: opts.Log, mcp: map[string]*mcpUpstream{}, stop: make(chan struct{})}
	if opts.LibraryDB != nil {
		l, err := g.openShared(opts.LibraryDB, opts.Library)
		if err != nil {
			return nil, err
		}
		g.opts.Library = l
		opts.Store.OnSync(g.followShared)
	}
	g.lib.Store(newState(g.opts.Library))
	g.http[0], g.http[1] = newHTTPClient(false, nil), newHTTPClient(true, nil)
	if g.up != nil && g.up.MCP != nil {
		for _, name := range g.up.MCP.Names() {
			g.mcp[name] = &mcpUpstream{g: g, name: name}
		}
	}
	if opts.UsageDB != nil {
		du := &dbUsage{db: opts.UsageDB, spool: opts.UsageSpool}
		if du.spool != "" {
			du.stop, du.done = make(chan struct{}), make(chan struct{})
			go g.drainLoop(du)
		}
		g.usage = du
	} else if opts.UsageLog != "" {
		u, err := openUsage(opts.UsageLog)
		if err != nil {
			return nil, err
		}
		g.usage = u
	}
	return g, nil
}

// Start connects to every MCP upstream in the background (stdio servers are started), so
// that they are ready for calls and their list_changed notifications are heard. A server
// that fails is retried with backoff.
func (g *Gateway) Start(ctx context.Context) {
	for _, name := range sortedKeys(g.mcp) {
		u := g.mcp[name]
		g.wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, startTimeout)
			defer cancel()
			if _, err := u.session(cctx); err != nil {
				g.log.Warn("upstream MCP server not reachable at start; retried at the next call", "server", name, "error", g.up.Redact(err.Error()))
			}
		})
	}
}

// startTimeout bounds connecting to an upstream at start.
const startTimeout = 60 * time.Second

// Close ends the MCP upstream sessions (stopping stdio servers) and the usage log.
func (g *Gateway) Close() error {
	if g.closed.Swap(true) {
		return nil
	}
	close(g.stop)
	g.wg.Wait()
	for _, u := range g.mcp {
		u.close()
	}
	if g.usage != nil {
		return g.usage.close()
	}
	return nil
}

// Library returns the library served now.
func (g *Gateway) Library() *library.Library { return g.lib.Load().lib }

// Tool returns the tool called name: its ID (namespace.name), its client name
// (library.ClientNames: what an OpenAI or Anthropic client calls it), or its name alone when
// no other tool has it.
func (g *Gateway) Tool(name string) (*library.Tool, bool) {
	st := g.lib.Load()
	return st.tool(name)
}

func (st *state) tool(name string) (*library.Tool, bool) {
	i, ok := st.byID[name]
	if !ok {
		i, ok = st.byClient[name]
	}
	if !ok {
		i, ok = st.byName[name]
	}
	if !ok {
		return nil, false
	}
	return &st.lib.Tools[i], true
}

// clientName returns the client name of the tool with ID id.
func (st *state) clientName(id string) string {
	if i, ok := st.byID[id]; ok && i < len(st.client) {
		return st.client[i]
	}
	return library.ClientName(id)
}

func (st *state) schema(t *library.Tool) (*jsonschema.Schema, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s, ok := st.schemas[t.ID()]; ok {
		return s, nil
	}
	s, err := library.CompileSchema(t.InputSchema)
	if err != nil {
		return nil, err
	}
	st.schemas[t.ID()] = s
	return s, nil
}

// ArgumentError is a call's arguments failing the tool's input schema; Problems name each
// failing field.
type ArgumentError struct {
	Tool     string
	Problems []string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("invalid arguments for tool %s: %s", e.Tool, strings.Join(e.Problems, "; "))
}

var printer = message.NewPrinter(language.English)

// Validate checks args (a JSON object; empty: {}) against tool t's input schema: nil, or an
// *ArgumentError naming each failing field (or an error saying the schema does not compile).
func Validate(t *library.Tool, args json.RawMessage) error {
	return validate(newState(&library.Library{}), t, args)
}

func validate(st *state, t *library.Tool, args json.RawMessage) error {
	sch, err := st.schema(t)
	if err != nil {
		return fmt.Errorf("tool %s: its input schema does not compile: %w", t.ID(), err)
	}
	if len(strings.TrimSpace(string(args))) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(args)))
	if err != nil {
		return &ArgumentError{Tool: t.ID(), Problems: []string{"arguments are not valid JSON: " + err.Error()}}
	}
	if _, ok := v.(map[string]any); !ok {
		return &ArgumentError{Tool: t.ID(), Problems: []string{"arguments must be a JSON object"}}
	}
	err = sch.Validate(v)
	var ve *jsonschema.ValidationError
	if err == nil {
		return nil
	}
	if !errors.As(err, &ve) {
		return &ArgumentError{Tool: t.ID(), Problems: []string{err.Error()}}
	}
	var probs []string
	leaves(ve, func(e *jsonschema.ValidationError) {
		if p := problem(e); !slices.Contains(probs, p) {
			probs = append(probs, p)
		}
	})
	if len(probs) > 8 {
		probs = append(probs[:8], fmt.Sprintf("and %d more", len(probs)-8))
	}
	return &ArgumentError{Tool: t.ID(), Problems: probs}
}

func leaves(e *jsonschema.ValidationError, f func(*jsonschema.ValidationError)) {
	if len(e.Causes) == 0 {
		f(e)
		return
	}
	for _, c := range e.Causes {
		leaves(c, f)
	}
}

// problem says what is wrong at one failing place, naming the field as a JSON pointer
// into the arguments ("message", "items/0/name").
func problem(e *jsonschema.ValidationError) string {
	loc := strings.Join(e.InstanceLocation, "/")
	field := func(name string) string {
		if loc == "" {
			return name
		}
		return loc + "/" + name
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		var out []string
		for _, m := range k.Missing {
			out = append(out, fmt.Sprintf("argument %q is required", field(m)))
		}
		return strings.Join(out, "; ")
	case *kind.AdditionalProperties:
		var out []string
		for _, p := range k.Properties {
			out = append(out, fmt.Sprintf("argument %q is not a parameter of this tool", field(p)))
		}
		return strings.Join(out, "; ")
	}
	msg := e.ErrorKind.LocalizedString(printer)
	if loc == "" {
		return "arguments: " + msg
	}
	return fmt.Sprintf("argument %q: %s", loc, msg)
}
