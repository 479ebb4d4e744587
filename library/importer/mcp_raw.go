package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The Go MCP SDK decodes a tool's inputSchema and outputSchema into maps, which lose the
// order of the properties, and its annotations into a struct, which adds the hints the
// server did not send (idempotentHint: false). A session made by Connect records the tools
// of its tools/list answers as the server sent them (rawTools), and SessionTools takes
// the schemas and annotations from there.

// rawTool is the part of a tools/list entry kept as sent.
type rawTool struct {
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
}

// rawTools records the tools of a session's tools/list answers by name, the latest
// answer's winning.
type rawTools struct {
	mu    sync.Mutex
	tools map[string]rawTool
}

// sessionRaw maps the sessions made by Connect to their rawTools.
var sessionRaw sync.Map // *mcp.ClientSession → *rawTools

func rawToolsOf(cs *mcp.ClientSession) *rawTools {
	r, _ := sessionRaw.Load(cs)
	rt, _ := r.(*rawTools)
	return rt
}

// get returns the tool named name as it was listed last.
func (r *rawTools) get(name string) (rawTool, bool) {
	if r == nil {
		return rawTool{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.tools[name]
	return t, ok
}

// result records the tools of result, a tools/list answer's result.
func (r *rawTools) result(result []byte) {
	var res struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(result, &res) != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tools == nil {
		r.tools = map[string]rawTool{}
	}
	for _, b := range res.Tools {
		var t struct {
			Name string `json:"name"`
			rawTool
		}
		if json.Unmarshal(b, &t) == nil && t.Name != "" {
			r.tools[t.Name] = t.rawTool
		}
	}
}

// message records the tools of msg, a JSON-RPC message answering tools/list.
func (r *rawTools) message(msg []byte) {
	var m struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(msg, &m) == nil && len(m.Result) > 0 {
		r.result(m.Result)
	}
}

// recordingTransport records the tools/list answers read on its connections. It wraps the
// stdio and SSE transports; streamable HTTP, whose connection the SDK needs unwrapped, is
// recorded by recordingRoundTripper.
type recordingTransport struct {
	mcp.Transport
	raw *rawTools
}

func (t recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Connection: c, raw: t.raw, pending: map[jsonrpc.ID]bool{}}, nil
}

type recordingConn struct {
	mcp.Connection
	raw     *rawTools
	mu      sync.Mutex
	pending map[jsonrpc.ID]bool // the tools/list requests not answered yet
}

func (c *recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" && req.ID.IsValid() {
		c.mu.Lock()
		c.pending[req.ID] = true
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

func (c *recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		listed := c.pending[resp.ID]
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		if listed && resp.Error == nil {
			c.raw.result(resp.Result)
		}
	}
	return msg, err
}

// recordingRoundTripper records the answers to the tools/list requests posted through it
// (streamable HTTP): a JSON body, or the events of a text/event-stream body as they are
// read.
type recordingRoundTripper struct {
	raw  *rawTools
	next http.RoundTripper
}

func (t recordingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.GetBody == nil || !isToolsList(r) {
		return t.next.RoundTrip(r)
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
		t.raw.message(b)
	case "text/event-stream":
		resp.Body = &sseRecorder{ReadCloser: resp.Body, raw: t.raw}
	}
	return resp, nil
}

// isToolsList reports whether r posts a tools/list request.
func isToolsList(r *http.Request) bool {
	body, err := r.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	var m struct {
		Method string `json:"method"`
	}
	return json.NewDecoder(body).Decode(&m) == nil && m.Method == "tools/list"
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

// sseRecorder passes an event stream through, recording the data of each event as the
// blank line that ends it is read (before the reader can have the event whole).
type sseRecorder struct {
	io.ReadCloser
	raw  *rawTools
	line []byte // the line being read
	data []byte // the data lines of the event being read
}

func (s *sseRecorder) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	for _, c := range p[:n] {
		if c != '\n' {
			s.line = append(s.line, c)
			continue
		}
		line := bytes.TrimSuffix(s.line, []byte("\r"))
		s.line = s.line[:0]
		if len(line) == 0 {
			if len(s.data) > 0 {
				s.raw.message(s.data)
				s.data = s.data[:0]
			}
			continue
		}
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(s.data) > 0 {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, bytes.TrimPrefix(d, []byte(" "))...)
		}
	}
	return n, err
}
