// Package serve answers tool-retrieval requests over HTTP (and MCP, see NewMCP) from an
// exported index with a live tool library (a store.Store):
//
//	POST   /v1/retrieve    {"query": "...", "k": 5} or {"queries": [...], "k": 5}
//	POST   /v1/embeddings  OpenAI's embeddings request and response
//	POST   /v1/tools       {"tools": [{"id", "title", "text", "hierarchy"}]}: add or replace
//	GET    /v1/tools/{id}  one tool of the current library
//	DELETE /v1/tools/{id}  remove a tool
//	GET    /healthz, GET /metrics (Prometheus)
//
// Every error is a 4xx (or 503) JSON object {"error": "..."} saying what is wrong. Requests
// are limited in body size, k, batch size and time; each is logged as one slog line. Write
// endpoints need "Authorization: Bearer TOKEN" when Config.Token is set.
package serve

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
)

// Config holds the server's limits and settings.
type Config struct {
	DefaultK int           // k when a request gives none (default 5)
	MaxK     int           // largest k (default 100)
	MaxBatch int           // most queries, embedding inputs or tools in one request (default 64)
	MaxBody  int64         // request body limit in bytes (default 1 MiB)
	Timeout  time.Duration // time limit of one request (default 10s)
	// MaxInFlight is the most requests answered at once (bodies read first); past it a
	// request gets a 503 with Retry-After at once. /healthz and /metrics are exempt. 0: no
	// limit.
	MaxInFlight int
	// Token, when set, is the bearer token write endpoints require. It is never logged.
	Token string
	// Model is the model name /v1/embeddings answers with when a request names none.
	Model string
	// MCP mounts the MCP streamable HTTP endpoint (find_tools) at /mcp.
	MCP bool
	// Keys, when set, are the API keys every endpoint but /healthz, /metrics and
	// /openapi.json needs, each with its scopes (ScopeSearch, ScopeCall, ScopeAdmin); the
	// admin Token stays valid for tool updates. Keys are never logged; their names are.
	Keys *Keys
	// Rate limits each caller (API key, else remote address) to Rate requests a second,
	// in bursts of Burst (default: Rate rounded down, at least 1); 0: no limit.
	Rate  float64
	Burst int
	// Extension adds endpoints and MCP tools (the gateway); nil: none.
	Extension Extension
	Logger    *slog.Logger // default slog.Default()
}

func (c *Config) defaults() {
	if c.DefaultK <= 0 {
		c.DefaultK = 5
	}
	if c.MaxK <= 0 {
		c.MaxK = 100
	}
	c.DefaultK = min(c.DefaultK, c.MaxK)
	if c.MaxBatch <= 0 {
		c.MaxBatch = 64
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 1 << 20
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Model == "" {
		c.Model = "toolret"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Server is the HTTP API over a store.Store.
type Server struct {
	cfg     Config
	store   *store.Store
	mux     *http.ServeMux
	metrics *metrics
	limits  *limiters
	own     map[string]bool // patterns an extension registered
	handler http.Handler    // mux behind the guard (guard.go)
}

// New returns the server of st.
func New(st *store.Store, cfg Config) *Server {
	cfg.defaults()
	s := &Server{cfg: cfg, store: st, mux: http.NewServeMux(), own: map[string]bool{}}
	s.metrics = newMetrics(st)
	s.limits = newLimiters(cfg.Rate, cfg.Burst)
	if cfg.Extension != nil {
		cfg.Extension.Routes(&Router{s})
	}
	s.routeScope("POST /v1/retrieve", "retrieve", ScopeSearch, 0, s.retrieve)
	s.routeScope("POST /v1/embeddings", "embeddings", ScopeSearch, 0, s.embeddings)
	s.routeScope("POST /v1/tools", "tools_put", ScopeAdmin, 0, s.putTools)
	s.routeScope("GET /v1/tools/{id}", "tools_get", ScopeSearch, 0, s.getTool)
	s.routeScope("DELETE /v1/tools/{id}", "tools_delete", ScopeAdmin, 0, s.deleteTool)
	s.route("GET /healthz", "healthz", s.healthz)
	s.mux.Handle("GET /metrics", s.instrument("metrics", s.metrics.handler()))
	// Other methods on known paths, and unknown paths: JSON errors.
	for _, p := range []string{"/v1/retrieve", "/v1/embeddings", "/v1/tools", "/v1/tools/{id}", "/healthz", "/metrics"} {
		s.route(p, "other", func(w http.ResponseWriter, r *http.Request) (any, *apiError) {
			return nil, errorf(http.StatusMethodNotAllowed, "method %s not allowed on %s", r.Method, r.URL.Path)
		})
	}
	if cfg.MCP {
		srv := NewMCP(st, cfg)
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
		s.mux.Handle("/mcp", s.instrument("mcp", s.mcpAccess(http.MaxBytesHandler(h, cfg.MaxBody))))
	}
	s.route("/", "other", func(w http.ResponseWriter, r *http.Request) (any, *apiError) {
		return nil, errorf(http.StatusNotFound, "no endpoint %s %s (POST /v1/retrieve, POST /v1/embeddings, POST /v1/tools, GET|DELETE /v1/tools/{id}, GET /healthz, GET /metrics)", r.Method, r.URL.Path)
	})
	s.handler = s.guard(s.mux)
	return s
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// handlerFunc answers a request with a value to send as JSON (status 200) or an error.
type handlerFunc func(w http.ResponseWriter, r *http.Request) (any, *apiError)

// reqInfo collects what a handler tells the request's log line.
type reqInfo struct {
	items   int    // queries, inputs or tools
	version uint64 // library version answered from or made
	key     string // name of the API key that sent it
}

type infoKey struct{}

func info(r *http.Request) *reqInfo {
	if i, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

// route registers h under pattern, open to every caller within the rate limit (routeScope).
func (s *Server) route(pattern, name string, h handlerFunc) { s.routeScope(pattern, name, "", 0, h) }

// routeScope registers h under pattern, with the access check of scope and the rate limit
// (authorize), the request time limit (timeout; 0: Config.Timeout), JSON answers, metrics
// and the log line. A pattern an extension registered is left to it.
func (s *Server) routeScope(pattern, name, scope string, timeout time.Duration, h handlerFunc) {
	if s.own[pattern] {
		return
	}
	if timeout <= 0 {
		timeout = s.cfg.Timeout
	}
	s.mux.Handle(pattern, s.instrument(name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if aerr := s.authorize(w, r, scope); aerr != nil {
			setError(w, aerr.msg)
			writeJSON(w, aerr.status, map[string]string{"error": aerr.msg})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		r = r.WithContext(ctx)
		v, aerr := h(w, r)
		if aerr == nil && ctx.Err() != nil {
			aerr = errorf(http.StatusServiceUnavailable, "request took longer than the %v limit (-timeout)", timeout)
		}
		if aerr != nil {
			setError(w, aerr.msg)
			writeJSON(w, aerr.status, map[string]string{"error": aerr.msg})
			return
		}
		writeJSON(w, http.StatusOK, v)
	})))
}

func setError(w http.ResponseWriter, msg string) {
	if rec, ok := w.(*recorder); ok {
		rec.err = msg
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// recorder records a response's status and size for the log line and metrics.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	err    string
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// instrument counts, times and logs every request of route name. The log line has no
// headers (so no token) and no query text.
func (s *Server) instrument(name string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &reqInfo{}
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), infoKey{}, ri)))
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		d := time.Since(start)
		s.metrics.observe(name, rec.status, d)
		attrs := []slog.Attr{
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("route", name),
			slog.Int("status", rec.status), slog.Float64("ms", float64(d.Microseconds())/1000),
			slog.Int64("bytes_in", r.ContentLength), slog.Int64("bytes_out", rec.bytes), slog.String("remote", r.RemoteAddr),
		}
		if ri.items > 0 {
			attrs = append(attrs, slog.Int("items", ri.items))
		}
		if ri.version > 0 {
			attrs = append(attrs, slog.Uint64("version", ri.version))
		}
		if ri.key != "" {
			attrs = append(attrs, slog.String("key", ri.key))
		}
		level := slog.LevelInfo
		if rec.err != "" {
			attrs = append(attrs, slog.String("error", rec.err))
			if rec.status >= 500 {
				level = slog.LevelError
			} else {
				level = slog.LevelWarn
			}
		}
		s.cfg.Logger.LogAttrs(r.Context(), level, "request", attrs...)
	})
}

// Hierarchy is a tool's place in a category → tool → API hierarchy (ToolBench style).
type Hierarchy struct {
	Category string `json:"category,omitempty"`
	Tool     string `json:"tool,omitempty"`
	API      string `json:"api,omitempty"`
}

func hierarchyOf(rec export.ToolRecord) *Hierarchy {
	if rec.Category == "" && rec.ToolName == "" && rec.APIName == "" {
		return nil
	}
	return &Hierarchy{Category: rec.Category, Tool: rec.ToolName, API: rec.APIName}
}

// ToolResult is one retrieved tool.
type ToolResult struct {
	ID    string  `json:"id"`
	Title string  `json:"title,omitempty"`
	Score float32 `json:"score"`
	// RetrievalScore is the bi-encoder similarity when a reranker set Score.
	RetrievalScore *float32 `json:"retrieval_score,omitempty"`
	// DenseScore and BM25Score are, when the server fuses with BM25 (serve -hybrid), the two
	// scores fused into the retrieval score: the first stage's (cosine, dot or MLC logit) and
	// BM25's (0 for a tool outside BM25's top list).
	DenseScore *float32   `json:"dense_score,omitempty"`
	BM25Score  *float32   `json:"bm25_score,omitempty"`
	Hierarchy  *Hierarchy `json:"hierarchy,omitempty"`
	Text       string     `json:"text,omitempty"`
}

// RetrieveRequest is the body of POST /v1/retrieve: one query or a batch.
type RetrieveRequest struct {
	Query    *string  `json:"query,omitempty"`
	Queries  []string `json:"queries,omitempty"`
	K        *int     `json:"k,omitempty"`
	WithText bool     `json:"with_text,omitempty"`
}

// RetrieveResponse answers POST /v1/retrieve: Tools for one query, Results for a batch, all
// from library Version of LibrarySize tools.
type RetrieveResponse struct {
	Version     uint64          `json:"version"`
	LibrarySize int             `json:"library_size"`
	Tools       []ToolResult    `json:"tools,omitempty"`
	Results     []QueryResponse `json:"results,omitempty"`
}

// QueryResponse is one query's tools in a batch answer.
type QueryResponse struct {
	Tools []ToolResult `json:"tools"`
}

func (s *Server) checkK(k *int) (int, *apiError) {
	if k == nil {
		return s.cfg.DefaultK, nil
	}
	if *k <= 0 || *k > s.cfg.MaxK {
		return 0, errorf(http.StatusBadRequest, `"k" = %d: must be between 1 and %d (-max-k)`, *k, s.cfg.MaxK)
	}
	return *k, nil
}

func (s *Server) retrieve(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	var req RetrieveRequest
	if err := readJSON(w, r, s.cfg.MaxBody, &req); err != nil {
		return nil, err
	}
	var queries []string
	switch {
	case req.Query != nil && req.Queries != nil:
		return nil, errorf(http.StatusBadRequest, `give "query" (one query) or "queries" (a batch), not both`)
	case req.Query != nil:
		if strings.TrimSpace(*req.Query) == "" {
			return nil, errorf(http.StatusBadRequest, `"query" is empty`)
		}
		queries = []string{*req.Query}
	case req.Queries != nil:
		if len(req.Queries) == 0 {
			return nil, errorf(http.StatusBadRequest, `"queries" is an empty array`)
		}
		if len(req.Queries) > s.cfg.MaxBatch {
			return nil, errorf(http.StatusBadRequest, `"queries" has %d queries, more than the limit of %d (-max-batch)`, len(req.Queries), s.cfg.MaxBatch)
		}
		for i, q := range req.Queries {
			if strings.TrimSpace(q) == "" {
				return nil, errorf(http.StatusBadRequest, `"queries"[%d] is empty`, i)
			}
		}
		queries = req.Queries
	default:
		return nil, errorf(http.StatusBadRequest, `missing "query" (or "queries" for a batch)`)
	}
	k, aerr := s.checkK(req.K)
	if aerr != nil {
		return nil, aerr
	}
	lib := s.store.R.Library()
	info(r).items, info(r).version = len(queries), lib.Version
	res, err := s.store.R.RetrieveFrom(r.Context(), lib, queries, k)
	if err != nil {
		return nil, internal(r, err)
	}
	out := &RetrieveResponse{Version: lib.Version, LibrarySize: lib.Len()}
	hybrid, _ := s.store.R.Hybrid()
	conv := func(rs []toolindex.Result) []ToolResult {
		tr := make([]ToolResult, len(rs))
		for i, x := range rs {
			rec := lib.Tool(x.Index)
			tr[i] = ToolResult{ID: x.ToolID, Title: x.Title, Score: x.Score, Hierarchy: hierarchyOf(rec)}
			if x.Score != x.RetrievalScore {
				rs := x.RetrievalScore
				tr[i].RetrievalScore = &rs
			}
			if hybrid != "" {
				d, b := x.DenseScore, x.BM25Score
				tr[i].DenseScore, tr[i].BM25Score = &d, &b
			}
			if req.WithText {
				tr[i].Text = x.Text
			}
		}
		return tr
	}
	if req.Query != nil {
		out.Tools = conv(res[0])
		if out.Tools == nil {
			out.Tools = []ToolResult{}
		}
	} else {
		out.Results = make([]QueryResponse, len(res))
		for i := range res {
			out.Results[i].Tools = conv(res[i])
		}
	}
	return out, nil
}

// internal maps an error of the models to a response: the time limit, or a 500.
func internal(r *http.Request, err error) *apiError {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || r.Context().Err() != nil {
		return errorf(http.StatusServiceUnavailable, "request took longer than the time limit (-timeout) or was cancelled")
	}
	return errorf(http.StatusInternalServerError, "%v", err)
}

// EmbeddingsRequest is OpenAI's embeddings request. InputType (as NVIDIA's and others'
// OpenAI-compatible APIs name it) picks the tower: "query" (default) or "document"/"passage"/
// "tool" for the tool tower.
type EmbeddingsRequest struct {
	Input          json.RawMessage `json:"input"`
	Model          string          `json:"model,omitempty"`
	EncodingFormat string          `json:"encoding_format,omitempty"`
	Dimensions     *int            `json:"dimensions,omitempty"`
	User           string          `json:"user,omitempty"`
	InputType      string          `json:"input_type,omitempty"`
}

// Embedding is one item of an embeddings response: []float32, or a base64 string of
// little-endian float32 with encoding_format "base64".
type Embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// EmbeddingsResponse is OpenAI's embeddings response.
type EmbeddingsResponse struct {
	Object string      `json:"object"`
	Data   []Embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  Usage       `json:"usage"`
}

// Usage counts the tokens read ([CLS] and [SEP] included, after truncation).
type Usage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	var req EmbeddingsRequest
	if err := readJSON(w, r, s.cfg.MaxBody, &req); err != nil {
		return nil, err
	}
	var inputs []string
	raw := strings.TrimSpace(string(req.Input))
	switch {
	case raw == "" || raw == "null":
		return nil, errorf(http.StatusBadRequest, `missing "input" (a string or an array of strings)`)
	case raw[0] == '"':
		var one string
		if err := json.Unmarshal(req.Input, &one); err != nil {
			return nil, errorf(http.StatusBadRequest, `"input": %v`, err)
		}
		inputs = []string{one}
	case raw[0] == '[':
		if err := json.Unmarshal(req.Input, &inputs); err != nil {
			return nil, errorf(http.StatusBadRequest, `"input" must be a string or an array of strings (token arrays are not supported: send text)`)
		}
		if len(inputs) == 0 {
			return nil, errorf(http.StatusBadRequest, `"input" is an empty array`)
		}
	default:
		return nil, errorf(http.StatusBadRequest, `"input" must be a string or an array of strings`)
	}
	if len(inputs) > s.cfg.MaxBatch {
		return nil, errorf(http.StatusBadRequest, `"input" has %d texts, more than the limit of %d (-max-batch)`, len(inputs), s.cfg.MaxBatch)
	}
	for i, in := range inputs {
		if strings.TrimSpace(in) == "" {
			if len(inputs) == 1 {
				return nil, errorf(http.StatusBadRequest, `"input" is empty`)
			}
			return nil, errorf(http.StatusBadRequest, `"input"[%d] is empty`, i)
		}
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		return nil, errorf(http.StatusBadRequest, `"encoding_format" %q: want "float" or "base64"`, req.EncodingFormat)
	}
	if d := req.Dimensions; d != nil && *d != s.store.R.Dim() {
		return nil, errorf(http.StatusBadRequest, `"dimensions" = %d: this model's embeddings have %d dimensions`, *d, s.store.R.Dim())
	}
	tower := biencoder.QueryTower
	switch req.InputType {
	case "", "query":
	case "document", "passage", "tool":
		tower = biencoder.ToolTower
		if err := s.store.R.CanEmbedTools(); err != nil {
			return nil, errorf(http.StatusConflict, "%v", err)
		}
	default:
		return nil, errorf(http.StatusBadRequest, `"input_type" %q: want "query" or "document" (the tool tower)`, req.InputType)
	}
	info(r).items = len(inputs)
	var emb [][]float32
	var err error
	if tower == biencoder.QueryTower {
		emb, err = s.store.R.EmbedQueries(r.Context(), inputs) // the query cache and dynamic batching
	} else {
		emb, err = s.store.R.Embed(tower, inputs)
	}
	if err != nil {
		return nil, internal(r, err)
	}
	out := &EmbeddingsResponse{Object: "list", Model: req.Model, Data: make([]Embedding, len(emb))}
	if out.Model == "" {
		out.Model = s.cfg.Model
	}
	for i, e := range emb {
		n, err := s.store.R.Tokens(tower, inputs[i])
		if err != nil {
			return nil, internal(r, err)
		}
		out.Usage.PromptTokens += n
		out.Data[i] = Embedding{Object: "embedding", Index: i, Embedding: e}
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(e))
			for j, v := range e {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(v))
			}
			out.Data[i].Embedding = base64.StdEncoding.EncodeToString(b)
		}
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	return out, nil
}

// ToolIn is a tool of POST /v1/tools.
type ToolIn struct {
	ID        string     `json:"id"`
	Title     string     `json:"title,omitempty"`
	Text      string     `json:"text"`
	Hierarchy *Hierarchy `json:"hierarchy,omitempty"`
}

// ToolsRequest is the body of POST /v1/tools.
type ToolsRequest struct {
	Tools []ToolIn `json:"tools"`
}

// UpdateResponse answers a tool update with the library version it made.
type UpdateResponse struct {
	Version     uint64   `json:"version"`
	LibrarySize int      `json:"library_size"`
	Added       []string `json:"added,omitempty"`
	Replaced    []string `json:"replaced,omitempty"`
	Deleted     []string `json:"deleted,omitempty"`
	// Warnings name the tools put with no title and no hierarchy: only their id names them.
	Warnings []string `json:"warnings,omitempty"`
}

func (s *Server) putTools(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	var req ToolsRequest
	if err := readJSON(w, r, s.cfg.MaxBody, &req); err != nil {
		return nil, err
	}
	if len(req.Tools) == 0 {
		return nil, errorf(http.StatusBadRequest, `missing "tools" (an array of {"id", "title", "text", "hierarchy"})`)
	}
	if len(req.Tools) > s.cfg.MaxBatch {
		return nil, errorf(http.StatusBadRequest, `"tools" has %d tools, more than the limit of %d (-max-batch)`, len(req.Tools), s.cfg.MaxBatch)
	}
	put := make([]export.ToolRecord, len(req.Tools))
	seen := map[string]int{}
	for i, t := range req.Tools {
		put[i] = export.ToolRecord{ID: t.ID, Title: t.Title, Text: t.Text}
		if h := t.Hierarchy; h != nil {
			put[i].Category, put[i].ToolName, put[i].APIName = h.Category, h.Tool, h.API
		}
		if err := store.CheckTool(put[i]); err != nil {
			return nil, errorf(http.StatusBadRequest, `"tools"[%d] (id %q): %v`, i, t.ID, err)
		}
		if j, dup := seen[t.ID]; dup {
			return nil, errorf(http.StatusBadRequest, `"tools"[%d]: id %q repeats "tools"[%d]`, i, t.ID, j)
		}
		seen[t.ID] = i
	}
	info(r).items = len(put)
	if err := r.Context().Err(); err != nil {
		return nil, internal(r, err)
	}
	lib, prev, err := s.store.Update(put, nil)
	if err != nil {
		return nil, updateError(err)
	}
	info(r).version = lib.Version
	out := &UpdateResponse{Version: lib.Version, LibrarySize: lib.Len()}
	for _, t := range put {
		if _, ok := prev.Lookup(t.ID); ok {
			out.Replaced = append(out.Replaced, t.ID)
		} else {
			out.Added = append(out.Added, t.ID)
		}
	}
	for i, t := range put {
		if strings.TrimSpace(t.Title) == "" && t.ToolName == "" && t.APIName == "" {
			out.Warnings = append(out.Warnings, fmt.Sprintf(`"tools"[%d] (id %q) has no "title" and no "hierarchy" tool or api: it is named by its id`, i, t.ID))
		}
	}
	return out, nil
}

func (s *Server) deleteTool(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	id := r.PathValue("id")
	info(r).items = 1
	lib, _, err := s.store.Update(nil, []string{id})
	if err != nil {
		return nil, updateError(err)
	}
	info(r).version = lib.Version
	return &UpdateResponse{Version: lib.Version, LibrarySize: lib.Len(), Deleted: []string{id}}, nil
}

// ToolOut is a tool of GET /v1/tools/{id}.
type ToolOut struct {
	Version uint64 `json:"version"`
	ToolIn
}

func (s *Server) getTool(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	id := r.PathValue("id")
	lib := s.store.R.Library()
	i, ok := lib.Lookup(id)
	if !ok {
		return nil, errorf(http.StatusNotFound, "no tool %q in the library (version %d)", id, lib.Version)
	}
	rec := lib.Tool(i)
	return &ToolOut{Version: lib.Version, ToolIn: ToolIn{ID: rec.ID, Title: rec.Title, Text: rec.Text, Hierarchy: hierarchyOf(rec)}}, nil
}

func updateError(err error) *apiError {
	switch {
	case errors.Is(err, store.ErrInvalid):
		return errorf(http.StatusBadRequest, "%v", err)
	case errors.Is(err, store.ErrNotFound):
		return errorf(http.StatusNotFound, "%v", err)
	case errors.Is(err, store.ErrLastTool), errors.Is(err, store.ErrNoTower):
		return errorf(http.StatusConflict, "%v", err)
	case errors.Is(err, store.ErrFailed), errors.Is(err, store.ErrBusy):
		return errorf(http.StatusServiceUnavailable, "%v", err)
	}
	return errorf(http.StatusInternalServerError, "%v", err)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	lib := s.store.R.Library()
	return map[string]any{"status": "ok", "version": lib.Version, "tools": lib.Len(), "dim": s.store.R.Dim(), "pending_updates": s.store.Pending(),
		"ann": s.store.R.ANN(), "embed": s.store.R.Stats()}, nil
}
