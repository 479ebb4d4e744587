package serve

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
)

func TestMain(m *testing.M) {
	code := m.Run()
	exporttest.RemoveIndex()
	if serveBin.dir != "" {
		os.RemoveAll(serveBin.dir)
	}
	os.Exit(code)
}

// newIndex returns a fresh copy of the tiny index.
// newIndex returns a fresh copy of the tiny test index (exporttest.NewIndex).
func newIndex(t testing.TB) string { return exporttest.NewIndex(t) }

func openStore(t testing.TB, dir string, compactEvery int) *store.Store {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(dir, compactEvery, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tool is a tool record with a text of the embedded dataset, chosen by id and title.
func tool(id, title string) export.ToolRecord {
	d, _ := data.Default()
	h := 0
	for _, c := range id + title {
		h = h*31 + int(c)
	}
	text := d.Tools[(h%len(d.Tools)+len(d.Tools))%len(d.Tools)].Text
	return export.ToolRecord{ID: id, Title: title, Text: title + ": " + text, Category: "live"}
}

// syncBuffer is a log destination safe for concurrent requests.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const testToken = "s3cret-t0ken-value"

// newServer serves a fresh index copy with cfg (logging into the returned buffer).
func newServer(t testing.TB, cfg Config) (*httptest.Server, *store.Store, *syncBuffer) {
	t.Helper()
	st := openStore(t, newIndex(t), 0)
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	srv := httptest.NewServer(New(st, cfg).Handler())
	t.Cleanup(func() {
		srv.Close()
		st.Close()
	})
	return srv, st, logs
}

// call sends a request and decodes the JSON answer into out (if not nil); it returns the
// status and the raw body.
func call(t testing.TB, srv *httptest.Server, method, path, token string, body []byte, out any) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || path != "/metrics" {
		if !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s %s: status %d, Content-Type %q, body %q", method, path, resp.StatusCode, ct, b)
		}
	}
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp.StatusCode, b
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestBadInput sends each malformed request of the table: each must get its 4xx and a JSON
// {"error"} naming what is wrong, change nothing, and leave the server serving.
func TestBadInput(t *testing.T) {
	srv, st, logs := newServer(t, Config{Token: testToken})
	many := make([]string, 65)
	for i := range many {
		many[i] = "q"
	}
	big := append([]byte(`{"query": "`), bytes.Repeat([]byte("a"), 10<<20)...)
	big = append(big, `"}`...)
	tok := testToken
	for _, tc := range []struct {
		name, method, path, token string
		body                      []byte
		status                    int
		want                      string
	}{
		{"malformed JSON (cut short)", "POST", "/v1/retrieve", "", []byte(`{"query": "weather",`), 400, "malformed JSON: the request object is cut short"},
		{"malformed JSON (syntax)", "POST", "/v1/retrieve", "", []byte(`{"query" "weather"}`), 400, "malformed JSON at offset 10"},
		{"not an object", "POST", "/v1/retrieve", "", []byte(`["weather"]`), 400, "request body is a JSON array, want an object"},
		{"two objects", "POST", "/v1/retrieve", "", []byte(`{"query": "a"} {"query": "b"}`), 400, "data after the request object"},
		{"empty body", "POST", "/v1/retrieve", "", nil, 400, "request body is empty"},
		{"missing query", "POST", "/v1/retrieve", "", []byte(`{"k": 3}`), 400, `missing "query" (or "queries" for a batch)`},
		{"null query", "POST", "/v1/retrieve", "", []byte(`{"query": null}`), 400, `missing "query"`},
		{"empty query", "POST", "/v1/retrieve", "", []byte(`{"query": ""}`), 400, `"query" is empty`},
		{"blank query", "POST", "/v1/retrieve", "", []byte(`{"query": " \n\t"}`), 400, `"query" is empty`},
		{"query and queries", "POST", "/v1/retrieve", "", []byte(`{"query": "a", "queries": ["b"]}`), 400, `not both`},
		{"empty batch", "POST", "/v1/retrieve", "", []byte(`{"queries": []}`), 400, `"queries" is an empty array`},
		{"empty query in a batch", "POST", "/v1/retrieve", "", []byte(`{"queries": ["a", ""]}`), 400, `"queries"[1] is empty`},
		{"batch above the limit", "POST", "/v1/retrieve", "", mustJSON(map[string]any{"queries": many}), 400, `"queries" has 65 queries, more than the limit of 64 (-max-batch)`},
		{"k = 0", "POST", "/v1/retrieve", "", []byte(`{"query": "a", "k": 0}`), 400, `"k" = 0: must be between 1 and 100 (-max-k)`},
		{"k < 0", "POST", "/v1/retrieve", "", []byte(`{"query": "a", "k": -3}`), 400, `"k" = -3: must be between 1`},
		{"k above the limit", "POST", "/v1/retrieve", "", []byte(`{"query": "a", "k": 101}`), 400, `"k" = 101: must be between 1 and 100`},
		{"k a string", "POST", "/v1/retrieve", "", []byte(`{"query": "a", "k": "5"}`), 400, `field "k" is a JSON string, want an integer`},
		{"k a fraction", "POST", "/v1/retrieve", "", []byte(`{"query": "a", "k": 2.5}`), 400, `field "k" is a JSON number 2.5, want an integer`},
		{"query a number", "POST", "/v1/retrieve", "", []byte(`{"query": 7}`), 400, `field "query" is a JSON number, want a string`},
		{"10 MB body", "POST", "/v1/retrieve", "", big, 413, "request body is larger than the limit of 1048576 bytes (-max-body)"},
		{"unknown field", "POST", "/v1/retrieve", "", []byte(`{"query": "a", "top_k": 3}`), 400, `unknown field "top_k" (known fields: query, queries, k, with_text)`},
		{"invalid UTF-8", "POST", "/v1/retrieve", "", []byte("{\"query\": \"caf\xe9 au lait\"}"), 400, "request body is not valid UTF-8 (invalid byte 0xe9 at offset 14)"},
		{"wrong method", "GET", "/v1/retrieve", "", nil, 405, "method GET not allowed on /v1/retrieve"},
		{"unknown path", "POST", "/v1/search", "", []byte(`{}`), 404, "no endpoint POST /v1/search"},
		{"embeddings: missing input", "POST", "/v1/embeddings", "", []byte(`{"model": "m"}`), 400, `missing "input"`},
		{"embeddings: empty input", "POST", "/v1/embeddings", "", []byte(`{"input": ""}`), 400, `"input" is empty`},
		{"embeddings: empty item", "POST", "/v1/embeddings", "", []byte(`{"input": ["a", " "]}`), 400, `"input"[1] is empty`},
		{"embeddings: token arrays", "POST", "/v1/embeddings", "", []byte(`{"input": [[101, 2054]]}`), 400, "token arrays are not supported"},
		{"embeddings: a number", "POST", "/v1/embeddings", "", []byte(`{"input": 5}`), 400, `"input" must be a string or an array of strings`},
		{"embeddings: dimensions", "POST", "/v1/embeddings", "", []byte(`{"input": "a", "dimensions": 8}`), 400, `"dimensions" = 8: this model's embeddings have 32 dimensions`},
		{"embeddings: encoding", "POST", "/v1/embeddings", "", []byte(`{"input": "a", "encoding_format": "int8"}`), 400, `"encoding_format" "int8"`},
		{"embeddings: input_type", "POST", "/v1/embeddings", "", []byte(`{"input": "a", "input_type": "image"}`), 400, `"input_type" "image"`},
		{"embeddings: unknown field", "POST", "/v1/embeddings", "", []byte(`{"input": "a", "truncate": true}`), 400, `unknown field "truncate"`},
		{"write without the token", "POST", "/v1/tools", "", []byte(`{"tools": [{"id": "x", "text": "y"}]}`), 401, `missing "Authorization: Bearer <token>" header`},
		{"write with a wrong token", "POST", "/v1/tools", "not-the-token", []byte(`{"tools": [{"id": "x", "text": "y"}]}`), 401, "invalid bearer token"},
		{"delete without the token", "DELETE", "/v1/tools/x", "", nil, 401, `missing "Authorization: Bearer <token>" header`},
		{"tool with empty text", "POST", "/v1/tools", tok, []byte(`{"tools": [{"id": "t1", "title": "T", "text": ""}]}`), 400, `"tools"[0] (id "t1"): "text" is empty`},
		{"tool with blank text", "POST", "/v1/tools", tok, []byte(`{"tools": [{"id": "t1", "text": "  "}]}`), 400, `"text" is empty`},
		{"tool without text", "POST", "/v1/tools", tok, []byte(`{"tools": [{"id": "t1"}]}`), 400, `"text" is empty`},
		{"tool with empty id", "POST", "/v1/tools", tok, []byte(`{"tools": [{"id": "", "text": "t"}]}`), 400, `"tools"[0] (id ""): "id" is empty`},
		{"tool id with a newline", "POST", "/v1/tools", tok, []byte(`{"tools": [{"id": "a\nb", "text": "t"}]}`), 400, `has control characters`},
		{"duplicate ids in one request", "POST", "/v1/tools", tok, []byte(`{"tools": [{"id": "t1", "text": "a"}, {"id": "t2", "text": "b"}, {"id": "t1", "text": "c"}]}`), 400, `"tools"[2]: id "t1" repeats "tools"[0]`},
		{"no tools", "POST", "/v1/tools", tok, []byte(`{"tools": []}`), 400, `missing "tools"`},
		{"unknown tool field", "POST", "/v1/tools", tok, []byte(`{"tools": [{"id": "t1", "text": "a", "description": "b"}]}`), 400, `unknown field "description" (known fields: tools[]{id, title, text, hierarchy{category, tool, api}})`},
		{"delete an absent tool", "DELETE", "/v1/tools/no-such-tool", tok, nil, 404, `no such tool "no-such-tool" in the library`},
		{"get an absent tool", "GET", "/v1/tools/no-such-tool", "", nil, 404, `no tool "no-such-tool" in the library`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := call(t, srv, tc.method, tc.path, tc.token, tc.body, nil)
			var e struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("status %d, body %q: not a JSON error: %v", status, body, err)
			}
			if status != tc.status || !strings.Contains(e.Error, tc.want) {
				t.Fatalf("status %d, error %q; want %d with %q", status, e.Error, tc.status, tc.want)
			}
			// Still serving, nothing changed.
			var ok RetrieveResponse
			if s, b := call(t, srv, "POST", "/v1/retrieve", "", []byte(`{"query": "what is the weather in Lisbon", "k": 2}`), &ok); s != 200 || len(ok.Tools) != 2 {
				t.Fatalf("after the bad request: status %d, %s", s, b)
			}
			if v := st.R.Library().Version; v != 0 {
				t.Fatalf("library version %d after a refused request", v)
			}
		})
	}
	if strings.Contains(logs.String(), testToken) {
		t.Fatal("the token appears in the log")
	}
	if n := strings.Count(logs.String(), `"status":400`); n < 30 {
		t.Fatalf("%d log lines with status 400", n)
	}
}

func TestRetrieveAPI(t *testing.T) {
	srv, st, logs := newServer(t, Config{DefaultK: 4})
	d, _ := data.Default()
	queries := []string{d.Queries[0].Text, d.Queries[1].Text, d.Queries[2].Text}
	want, err := st.R.RetrieveBatch(t.Context(), queries, 4)
	if err != nil {
		t.Fatal(err)
	}
	same := func(got []ToolResult, want []toolindex.Result) error {
		if len(got) != len(want) {
			return fmt.Errorf("%d tools, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i].ID != want[i].ToolID || math.Abs(float64(got[i].Score-want[i].Score)) > 1e-6 || got[i].Title != want[i].Title {
				return fmt.Errorf("rank %d: %+v, want %+v", i, got[i], want[i])
			}
			h := got[i].Hierarchy
			if want[i].Category != "" && (h == nil || h.Category != want[i].Category || h.Tool != want[i].ToolName || h.API != want[i].APIName) {
				return fmt.Errorf("rank %d: hierarchy %+v, want %s/%s/%s", i, h, want[i].Category, want[i].ToolName, want[i].APIName)
			}
		}
		return nil
	}
	var one RetrieveResponse
	if s, b := call(t, srv, "POST", "/v1/retrieve", "", mustJSON(map[string]any{"query": queries[1]}), &one); s != 200 {
		t.Fatalf("status %d: %s", s, b)
	}
	if err := same(one.Tools, want[1]); err != nil || one.LibrarySize != st.R.Len() || one.Version != 0 || one.Tools[0].Text != "" {
		t.Fatalf("single query (default k 4): %v; %+v", err, one)
	}
	var batch RetrieveResponse
	call(t, srv, "POST", "/v1/retrieve", "", mustJSON(map[string]any{"queries": queries, "k": 4, "with_text": true}), &batch)
	if len(batch.Results) != len(queries) || batch.Tools != nil {
		t.Fatalf("batch: %+v", batch)
	}
	for i := range queries {
		if err := same(batch.Results[i].Tools, want[i]); err != nil {
			t.Fatalf("batch query %d: %v", i, err)
		}
		if batch.Results[i].Tools[0].Text != want[i][0].Text {
			t.Fatalf("with_text: %q", batch.Results[i].Tools[0].Text)
		}
	}
	var h map[string]any
	if s, _ := call(t, srv, "GET", "/healthz", "", nil, &h); s != 200 || h["status"] != "ok" || h["tools"] != float64(st.R.Len()) {
		t.Fatalf("healthz %d %v", s, h)
	}
	// Metrics: requests, errors, latency, index size.
	call(t, srv, "POST", "/v1/retrieve", "", []byte(`{}`), nil)
	_, m := call(t, srv, "GET", "/metrics", "", nil, nil)
	for _, w := range []string{
		`toolret_http_requests_total{code="200",route="retrieve"} 2`,
		`toolret_http_request_errors_total{code="400",route="retrieve"} 1`,
		`toolret_http_request_duration_seconds_bucket{route="retrieve",le="+Inf"} 3`,
		fmt.Sprintf("toolret_index_tools %d", st.R.Len()),
		"toolret_library_version 0",
		"go_goroutines",
	} {
		if !strings.Contains(string(m), w) {
			t.Errorf("metrics lack %q", w)
		}
	}
	// One log line per request (healthz, 3 retrieves, metrics is logged after its answer).
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) < 4 || !strings.Contains(lines[0], `"route":"retrieve"`) || !strings.Contains(lines[0], `"status":200`) || !strings.Contains(lines[0], `"items":1`) {
		t.Fatalf("log lines: %q", lines)
	}
}

func TestEmbeddings(t *testing.T) {
	srv, st, _ := newServer(t, Config{Model: "tiny-index"})
	texts := []string{"convert 100 dollars to euros", "weather in Lisbon tomorrow", "a much longer text " + strings.Repeat("about currencies ", 30)}
	wantQ, _ := st.R.Embed(biencoder.QueryTower, texts)
	wantT, _ := st.R.Embed(biencoder.ToolTower, texts)
	var resp struct {
		Object string `json:"object"`
		Data   []struct {
			Object    string          `json:"object"`
			Index     int             `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Model string `json:"model"`
		Usage Usage  `json:"usage"`
	}
	decode := func(raw json.RawMessage, b64 bool) []float32 {
		if !b64 {
			var v []float32
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		var s string
		json.Unmarshal(raw, &s)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v
	}
	for _, tc := range []struct {
		name string
		req  map[string]any
		want [][]float32
		b64  bool
		// model answered
		model string
	}{
		{"string", map[string]any{"input": texts[0], "model": "text-embedding-3-small"}, wantQ[:1], false, "text-embedding-3-small"},
		{"array", map[string]any{"input": texts}, wantQ, false, "tiny-index"},
		{"base64", map[string]any{"input": texts, "encoding_format": "base64", "dimensions": 32}, wantQ, true, "tiny-index"},
		{"tool tower", map[string]any{"input": texts, "input_type": "document"}, wantT, false, "tiny-index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, b := call(t, srv, "POST", "/v1/embeddings", "", mustJSON(tc.req), &resp); s != 200 {
				t.Fatalf("status %d: %s", s, b)
			}
			if resp.Object != "list" || resp.Model != tc.model || len(resp.Data) != len(tc.want) {
				t.Fatalf("object %q model %q, %d embeddings", resp.Object, resp.Model, len(resp.Data))
			}
			tokens := 0
			tower := biencoder.QueryTower
			if tc.req["input_type"] != nil {
				tower = biencoder.ToolTower
			}
			for i, e := range resp.Data {
				got := decode(e.Embedding, tc.b64)
				if e.Object != "embedding" || e.Index != i || len(got) != 32 {
					t.Fatalf("item %d: %q index %d, %d dims", i, e.Object, e.Index, len(got))
				}
				for j := range got {
					if got[j] != tc.want[i][j] {
						t.Fatalf("item %d differs from the %s tower at %d: %v vs %v", i, tower, j, got[j], tc.want[i][j])
					}
				}
				n, _ := st.R.Tokens(tower, texts[i])
				tokens += n
			}
			if resp.Usage.PromptTokens != tokens || resp.Usage.TotalTokens != tokens || tokens < 2*len(resp.Data) {
				t.Fatalf("usage %+v, want %d tokens", resp.Usage, tokens)
			}
		})
	}
}

// TestToolsLifecycle adds, replaces and deletes a tool through the API.
func TestToolsLifecycle(t *testing.T) {
	srv, st, logs := newServer(t, Config{Token: testToken})
	n0 := st.R.Len()
	q := "book a table for two at an italian restaurant tonight"
	var up UpdateResponse
	s, b := call(t, srv, "POST", "/v1/tools", testToken, mustJSON(map[string]any{"tools": []map[string]any{
		{"id": "live/restaurant-booking", "title": "Restaurant booking", "text": q, "hierarchy": map[string]string{"category": "Food", "tool": "Tables", "api": "book"}},
		{"id": "live-2", "text": "send an sms to a phone number"},
	}}), &up)
	if s != 200 || up.Version != 1 || up.LibrarySize != n0+2 || len(up.Added) != 2 || up.Replaced != nil {
		t.Fatalf("add: %d %s", s, b)
	}
	// A tool with no title and no hierarchy is added, with a warning naming it.
	if want := `"tools"[1] (id "live-2") has no "title" and no "hierarchy" tool or api: it is named by its id`; len(up.Warnings) != 1 || up.Warnings[0] != want {
		t.Errorf("add: warnings %q, want [%q]", up.Warnings, want)
	}
	var res RetrieveResponse
	call(t, srv, "POST", "/v1/retrieve", "", mustJSON(map[string]any{"query": q, "k": 3}), &res)
	// The tool's text is the query, within both lengths: same embedding, cosine 1.
	if res.Version != 1 || res.Tools[0].ID != "live/restaurant-booking" || res.Tools[0].Score < 0.9999 || res.Tools[0].Hierarchy == nil || res.Tools[0].Hierarchy.API != "book" {
		t.Fatalf("retrieve after add: %+v", res)
	}
	var got ToolOut
	if s, b := call(t, srv, "GET", "/v1/tools/live%2Frestaurant-booking", "", nil, &got); s != 200 || got.Text != q || got.Title != "Restaurant booking" {
		t.Fatalf("get: %d %s", s, b)
	}
	up = UpdateResponse{}
	call(t, srv, "POST", "/v1/tools", testToken, mustJSON(map[string]any{"tools": []map[string]any{{"id": "live/restaurant-booking", "title": "Booking v2", "text": q + " please"}}}), &up)
	if up.Version != 2 || up.LibrarySize != n0+2 || len(up.Replaced) != 1 || up.Added != nil || up.Warnings != nil {
		t.Fatalf("replace: %+v", up)
	}
	call(t, srv, "POST", "/v1/retrieve", "", mustJSON(map[string]any{"query": q, "k": 3}), &res)
	if res.Tools[0].ID != "live/restaurant-booking" || res.Tools[0].Title != "Booking v2" {
		t.Fatalf("retrieve after replace: %+v", res.Tools[0])
	}
	up = UpdateResponse{}
	if s, b := call(t, srv, "DELETE", "/v1/tools/live%2Frestaurant-booking", testToken, nil, &up); s != 200 || up.Version != 3 || up.LibrarySize != n0+1 || up.Deleted[0] != "live/restaurant-booking" {
		t.Fatalf("delete: %d %s", s, b)
	}
	call(t, srv, "POST", "/v1/retrieve", "", mustJSON(map[string]any{"query": q, "k": 10}), &res)
	for _, x := range res.Tools {
		if x.ID == "live/restaurant-booking" {
			t.Fatal("deleted tool retrieved")
		}
	}
	if s, _ := call(t, srv, "GET", "/v1/tools/live%2Frestaurant-booking", "", nil, nil); s != 404 {
		t.Fatalf("get after delete: %d", s)
	}
	if s, _ := call(t, srv, "DELETE", "/v1/tools/live%2Frestaurant-booking", testToken, nil, nil); s != 404 {
		t.Fatalf("second delete: %d", s)
	}
	_, m := call(t, srv, "GET", "/metrics", "", nil, nil)
	if !strings.Contains(string(m), "toolret_library_version 3") || !strings.Contains(string(m), "toolret_tool_updates_total 4") || !strings.Contains(string(m), "toolret_update_log_records 3") {
		t.Fatalf("metrics after updates:\n%s", m)
	}
	if strings.Contains(logs.String(), testToken) {
		t.Fatal("the token appears in the log")
	}
}

// TestLastTool refuses to empty the library.
func TestLastTool(t *testing.T) {
	st := openStore(t, newIndex(t), 0)
	defer st.Close()
	lib := st.R.Library()
	ids := make([]string, lib.Len())
	for i := range ids {
		ids[i] = lib.Tool(i).ID
	}
	if _, _, err := st.Update(nil, ids); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("deleting every tool: %v", err)
	}
	if _, _, err := st.Update(nil, ids[1:]); err != nil {
		t.Fatal(err)
	}
	if st.R.Len() != 1 {
		t.Fatalf("%d tools left", st.R.Len())
	}
}

// TestUpdateErrorStatus: the store's errors become their HTTP statuses; a shared library's
// ErrBusy (other servers' commits kept preceding the update) and ErrUnavailable are 503s.
func TestUpdateErrorStatus(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
	}{
		{fmt.Errorf("%w: tools[0]: bad", store.ErrInvalid), http.StatusBadRequest},
		{fmt.Errorf("%w %q in the library", store.ErrNotFound, "x"), http.StatusNotFound},
		{store.ErrLastTool, http.StatusConflict},
		{store.ErrNoTower, http.StatusConflict},
		{fmt.Errorf("%w: the store is closed", store.ErrFailed), http.StatusServiceUnavailable},
		{fmt.Errorf("store: 3 commits of other servers preceded this update's in 30s: %w", store.ErrBusy), http.StatusServiceUnavailable},
		{fmt.Errorf("%w (reconnecting)", store.ErrUnavailable), http.StatusServiceUnavailable},
		{fmt.Errorf("something else"), http.StatusInternalServerError},
	} {
		if e := updateError(c.err); e.status != c.status {
			t.Errorf("%v: status %d, want %d", c.err, e.status, c.status)
		}
	}
}
