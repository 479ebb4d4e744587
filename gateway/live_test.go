package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/gateway"
	"github.com/toolret/toolret/internal/pgtest"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/serve"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
)

// waitFor polls cond every 20 ms until it holds, failing t after limit.
func waitFor(t *testing.T, limit time.Duration, what string, logs *syncBuffer, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; log:\n%s", what, limit, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// searchNames returns the IDs a search gives (k 100: every tool of the fixture).
func (f *fixture) searchNames(t *testing.T, key, query string) ([]string, uint64) {
	t.Helper()
	var sr gateway.SearchResult
	if s, b := f.do(t, "POST", "/v1/search", key, map[string]any{"query": query, "k": 100}, &sr); s != 200 {
		t.Fatalf("search: %d %s", s, b)
	}
	var names []string
	for _, d := range sr.Tools {
		names = append(names, d.Name)
	}
	return names, sr.Version
}

// without returns l's tools but the one of ID id, with the description of ID change
// replaced by desc.
func without(l *library.Library, id, change, desc string) *library.Library {
	out := &library.Library{Template: l.Template}
	for _, t := range l.Tools {
		if t.ID() == id {
			continue
		}
		if t.ID() == change {
			t.Description = desc
		}
		out.Tools = append(out.Tools, t)
	}
	return out
}

// TestReimportLive: rewriting the library file of a running gateway (toolret import -out
// FILE writes a complete file and renames it over; an editor writes in place) removes,
// changes and adds tools in searches, calls, GET /v1/tools and the index, embedding only the
// changed tools, and bumps library_version; no restart.
func TestReimportLive(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := f.gw.WatchLibrary(ctx); err != nil {
		t.Fatal(err)
	}
	full := f.gw.Library()
	_, v0 := f.searchNames(t, "", "create a pet")
	const desc = "Fetch the record of one pet of the shop by its numeric id."
	embedded0 := f.store.R.Stats().ToolTexts

	// 1. Renamed over the file (library.Write, as toolret import does): pets.createPet
	// removed, pets.getPet changed.
	if err := library.Write(f.libPath, without(full, "pets.createPet", "pets.getPet", desc)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the removal reaching the gateway", f.logs, func() bool {
		_, def := f.gw.Tool("pets.createPet")
		_, idx := f.store.R.Library().Lookup("pets.createPet")
		return !def && !idx
	})
	names, v1 := f.searchNames(t, "", "create a pet")
	if slices.Contains(names, "pets.createPet") || v1 <= v0 {
		t.Fatalf("after the removal: search gives %v at library_version %d (was %d)", names, v1, v0)
	}
	if s, b := f.do(t, "POST", "/v1/call", "", map[string]any{"name": "pets.createPet", "arguments": map[string]any{"name": "Rex"}}, nil); s != 404 {
		t.Fatalf("calling the removed tool: %d %s, want 404", s, b)
	}
	var got gateway.ToolDetail
	if s, b := f.do(t, "GET", "/v1/tools/pets.getPet", "", nil, &got); s != 200 || got.Description != desc || !strings.Contains(got.Text, "numeric id") {
		t.Fatalf("the changed tool: %d %s (description %q, text %q)", s, b, got.Description, got.Text)
	}
	if n := f.store.R.Stats().ToolTexts - embedded0; n != 1 {
		t.Fatalf("%d tools embedded for one changed tool, want 1", n)
	}

	// 2. Written in place: pets.createPet back, callable.
	var b strings.Builder
	if err := library.Encode(&b, full); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.libPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the addition reaching the gateway", f.logs, func() bool {
		_, def := f.gw.Tool("pets.createPet")
		_, idx := f.store.R.Library().Lookup("pets.createPet")
		return def && idx
	})
	names, v2 := f.searchNames(t, "", "create a pet")
	if !slices.Contains(names, "pets.createPet") || v2 <= v1 {
		t.Fatalf("after the addition: search gives %v at library_version %d (was %d)", names, v2, v1)
	}
	var cr gateway.CallResult
	if s, b := f.do(t, "POST", "/v1/call", "", map[string]any{"name": "pets.createPet", "arguments": map[string]any{"name": "Rex"}}, &cr); s != 200 || cr.IsError || !strings.Contains(cr.Text, `"created"`) {
		t.Fatalf("calling the added tool: %d %s %+v", s, b, cr)
	}

	// 3. A file that does not read changes nothing.
	if err := os.WriteFile(f.libPath, []byte("{not a library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the broken file being reported", f.logs, func() bool {
		return strings.Contains(f.logs.String(), "does not read; serving the library read last")
	})
	if n := len(f.gw.Library().Tools); n != len(full.Tools) {
		t.Fatalf("a broken library file changed the library to %d tools", n)
	}
}

// TestListChangedInProcess: an in-process upstream (MCP over streamable HTTP) adding,
// changing and removing tools notifies tools/list_changed; the gateway lists its tools again
// and applies the difference to searches, calls and the library file.
func TestListChangedInProcess(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	cs := f.mcpClient(t, "")
	if text, isErr := callText(t, cs, "remote.echo", map[string]any{"message": "hi"}); isErr || text != "echo: hi" {
		t.Fatalf("remote.echo: %q", text)
	}
	mcp.AddTool(f.remote, &mcp.Tool{Name: "translate", Description: "Translate a text into another language."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
			To   string `json:"to"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "[" + in.To + "] " + in.Text}}}, nil, nil
		})
	f.remote.RemoveTools("add")
	mcp.AddTool(f.remote, &mcp.Tool{Name: "echo", Description: "Repeat the caller's words, as they were said."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo2: " + in.Message}}}, nil, nil
		})
	waitFor(t, 15*time.Second, "the upstream's changes reaching the gateway", f.logs, func() bool {
		_, added := f.gw.Tool("remote.translate")
		_, kept := f.gw.Tool("remote.add")
		e, _ := f.gw.Tool("remote.echo")
		return added && !kept && e != nil && strings.HasPrefix(e.Description, "Repeat")
	})
	if text, isErr := callText(t, cs, "remote.translate", map[string]any{"text": "hello", "to": "fr"}); isErr || text != "[fr] hello" {
		t.Fatalf("calling the added tool: %q", text)
	}
	if _, isErr := callText(t, cs, "remote.add", map[string]any{"a": 1, "b": 2}); !isErr {
		t.Fatal("the removed tool is still called")
	}
	names, _ := f.searchNames(t, "", "translate a text")
	if !slices.Contains(names, "remote.translate") || slices.Contains(names, "remote.add") {
		t.Fatalf("search gives %v", names)
	}
	lib, err := library.Read(f.libPath)
	if err != nil {
		t.Fatal(err)
	}
	if i, ok := lib.Index()["remote.translate"]; !ok || lib.Tools[i].Source.Server != "remote" {
		t.Fatal("the library file lacks the added tool")
	}
	if _, ok := lib.Index()["remote.add"]; ok {
		t.Fatal("the library file keeps the removed tool")
	}
}

// TestAdminTools: in gateway mode POST /v1/tools takes tool definitions and adds only tools
// the gateway can serve (an upstream's listed MCP tool, an OpenAPI upstream's operation, a
// function), refusing others saying why; an added tool is callable, persisted to the library
// file and survives a restart; DELETE removes it likewise.
func TestAdminTools(t *testing.T) {
	keys, err := serve.ParseKeys([]byte("admin admin-key-00000001 search,call,admin\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureOpts{keys: keys})
	const key = "admin-key-00000001"
	lib := f.gw.Library()
	echo := lib.Tools[lib.Index()["remote.echo"]]
	getPet := lib.Tools[lib.Index()["pets.getPet"]]

	// Remove remote.echo first, so that adding it back is an addition.
	if s, b := f.do(t, "DELETE", "/v1/tools/remote.echo", key, nil, nil); s != 200 {
		t.Fatalf("DELETE: %d %s", s, b)
	}
	if _, ok := f.gw.Tool("remote.echo"); ok {
		t.Fatal("deleted tool still served")
	}

	notListed := echo
	notListed.Name = "shout"
	noUpstream := echo
	noUpstream.Namespace, noUpstream.Source.Server = "elsewhere", "elsewhere"
	noAPI := getPet
	noAPI.Namespace = "zoo"
	fn := library.Tool{Namespace: "local", Name: "lookup_order", Description: "Look up an order by its number.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"number":{"type":"string"}}}`), Source: library.Source{Kind: library.KindFunctions}}
	for _, tc := range []struct {
		name   string
		tools  []any
		status int
		want   string
	}{
		{"index record", []any{map[string]any{"id": "x.y", "text": "a tool"}}, 400, "index record"},
		{"not listed by its server", []any{notListed}, 422, `has no tool "shout"`},
		{"server not an upstream", []any{noUpstream}, 422, `"elsewhere"`},
		{"namespace not an OpenAPI upstream", []any{noAPI}, 422, `namespace "zoo"`},
		{"invalid schema", []any{library.Tool{Name: "bad", Namespace: "local", InputSchema: json.RawMessage(`[]`), Source: library.Source{Kind: library.KindFunctions}}}, 400, "input_schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, b := f.do(t, "POST", "/v1/tools", key, map[string]any{"tools": tc.tools}, nil)
			if s != tc.status || !strings.Contains(b, tc.want) {
				t.Fatalf("%d %s, want %d ...%s...", s, b, tc.status, tc.want)
			}
		})
	}
	if s, b := f.do(t, "POST", "/v1/tools", "", map[string]any{"tools": []any{fn}}, nil); s != 401 {
		t.Fatalf("without a key: %d %s", s, b)
	}

	var res struct { // gateway.UpdateResult
		Version  uint64   `json:"library_version"`
		Added    []string `json:"added"`
		Embedded int      `json:"embedded"`
	}
	if s, b := f.do(t, "POST", "/v1/tools", key, map[string]any{"tools": []any{echo, fn}}, &res); s != 200 {
		t.Fatalf("POST /v1/tools: %d %s", s, b)
	}
	if !slices.Equal(res.Added, []string{"remote.echo", "local.lookup_order"}) || res.Embedded != 2 {
		t.Fatalf("answer %+v", res)
	}
	cs := f.mcpClient(t, key)
	if text, isErr := callText(t, cs, "remote.echo", map[string]any{"message": "back"}); isErr || text != "echo: back" {
		t.Fatalf("calling the added tool: %q", text)
	}
	names, v := f.searchNames(t, key, "look up an order")
	if !slices.Contains(names, "local.lookup_order") || v != res.Version {
		t.Fatalf("search: %v at version %d, want local.lookup_order at %d", names, v, res.Version)
	}
	if s, b := f.do(t, "DELETE", "/v1/tools/local.lookup_order", key, nil, nil); s != 200 {
		t.Fatalf("DELETE: %d %s", s, b)
	}
	if s, _ := f.do(t, "DELETE", "/v1/tools/local.lookup_order", key, nil, nil); s != 404 {
		t.Fatalf("DELETE of a missing tool: %d", s)
	}

	// The library file holds the changes; a gateway started over it (a restart) serves them.
	want := f.gw.Library()
	disk, err := library.Read(f.libPath)
	if err != nil {
		t.Fatal(err)
	}
	if c := library.Diff(want, disk); !c.Empty() {
		t.Fatalf("library file differs from the library served: %s", c)
	}
	f.gw.Close()
	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(f.store.Dir(), 0, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	up, err := gateway.ReadUpstreams(f.upPath)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Options{Library: disk, LibraryPath: f.libPath, Store: st, Upstreams: up})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	if a, c, d, err := gw.SyncIndex(); err != nil || a+c+d != 0 {
		t.Fatalf("after the restart the index needed %d added, %d changed, %d deleted (%v): the index did not keep the changes", a, c, d, err)
	}
	if _, ok := gw.Tool("remote.echo"); !ok {
		t.Fatal("after a restart the added tool is gone")
	}
	if _, ok := gw.Tool("local.lookup_order"); ok {
		t.Fatal("after a restart the deleted tool is back")
	}
}

// TestReimportPG: a re-import of replica a's library file reaches replica b (sharing the
// library through PostgreSQL): the removed tool leaves b's searches and index.
func TestReimportPG(t *testing.T) {
	url := pgtest.Start(t).NewDB(t)
	a := newFixture(t, fixtureOpts{database: url})
	b := newFixture(t, fixtureOpts{database: url})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := a.gw.WatchLibrary(ctx); err != nil {
		t.Fatal(err)
	}
	if err := library.Write(a.libPath, without(a.gw.Library(), "pets.createPet", "pets.getPet", "Fetch one pet by id, again.")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "a's re-import reaching b", b.logs, func() bool {
		_, def := b.gw.Tool("pets.createPet")
		_, idx := b.store.R.Library().Lookup("pets.createPet")
		g, _ := b.gw.Tool("pets.getPet")
		return !def && !idx && g != nil && strings.HasPrefix(g.Description, "Fetch one pet by id")
	})
	if names, _ := b.searchNames(t, "", "create a pet"); slices.Contains(names, "pets.createPet") {
		t.Fatalf("b's search gives the removed tool: %v", names)
	}
}

// TestServeReimport: `toolret serve -library` (toolret.Serve, in a child process) serves a
// library file rewritten under it, as `toolret import -out` rewrites it, without a restart:
// the tool removed answers 404, the tool changed its new text.
func TestServeReimport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	dir := t.TempDir()
	upPath := writeUpstreams(t, dir, "5s")
	libPath := importLibrary(t, dir, upPath)
	cfg := toolret.DefaultServeConfig()
	cfg.Library, cfg.Pretrained, cfg.Upstreams, cfg.Addr = libPath, stubModel(t), upPath, freeAddr(t)
	c := startChild(t, cfg)
	if s := c.status(t, "/v1/tools/pets.createPet"); s != 200 {
		t.Fatalf("before: GET pets.createPet: %d", s)
	}
	lib, err := library.Read(libPath)
	if err != nil {
		t.Fatal(err)
	}
	const desc = "Fetch the record of one pet of the shop by its numeric id."
	if err := library.Write(libPath, without(lib, "pets.createPet", "pets.getPet", desc)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.status(t, "/v1/tools/pets.createPet") != 404 {
		if time.Now().After(deadline) {
			t.Fatalf("the re-import did not reach the running server within 10 s:\n%s", c.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get(c.base + "/v1/tools/pets.getPet")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got gateway.ToolDetail
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got.Description != desc || got.Version == 0 {
		t.Fatalf("the changed tool: %v %+v", err, got)
	}
	if s, out := c.post(t, "/v1/call", map[string]any{"name": "pets.createPet", "arguments": map[string]any{"name": "Rex"}}); s != 404 {
		t.Fatalf("calling the removed tool: %d %v", s, out)
	}
}
