package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/gateway"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/serve"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
)

func TestParseUpstreams(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "s.env"), "# secrets\nexport API_TOKEN=\"tok-123456\"\nOTHER=x\n")
	t.Setenv("GW_TEST_HOST", "api.example.com")
	u, err := gateway.ParseUpstreams([]byte(`{"openapi": {"api": {"base_url": "https://${GW_TEST_HOST}/v1",
		"headers": {"Authorization": "Bearer ${API_TOKEN}"}}}, "secrets": "s.env", "call_timeout": "5s"}`), dir)
	if err != nil {
		t.Fatal(err)
	}
	if u.MCP != nil || u.CallTimeout.Seconds() != 5 || u.OpenAPI["api"].BaseURL != "https://${GW_TEST_HOST}/v1" {
		t.Fatalf("%+v", u)
	}
	if got := u.Redact("header was Bearer tok-123456, escaped tok-123456"); strings.Contains(got, "tok-123456") {
		t.Fatalf("Redact: %q", got)
	}
	for _, tc := range []struct{ cfg, want string }{
		{`{"openapi": {"api": {"headers": {"X": "${GW_TEST_UNSET_VAR}"}}}}`, "variable GW_TEST_UNSET_VAR is set neither in the secrets file nor in the environment"},
		{`{"openapi": {"a.b": {}}}`, `openapi "a.b": not a namespace`},
		{`{"openapi": {"api": {"base_url": "ftp://x"}}}`, "want an absolute http or https URL"},
		{`{"call_timeout": "soon"}`, `call_timeout "soon"`},
		{`{"secrets": "missing.env"}`, "secrets file"},
		{`{"mcpServers": {"x": {}}}`, `server "x": neither "command" nor "url"`},
		{`{"mcpServers": {"x": {"command": "run", "env": {"K": "${GW_TEST_UNSET_VAR}"}}}}`, `MCP server "x": env K: variable GW_TEST_UNSET_VAR`},
		{`[1]`, "malformed JSON"},
	} {
		if _, err := gateway.ParseUpstreams([]byte(tc.cfg), dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestParseKeys(t *testing.T) {
	ks, err := serve.ParseKeys([]byte("a aaaaaaaaaaaaaaaa1 search\nb sha256:" + strings.Repeat("ab", 32) + " call,admin\n"))
	if err != nil || ks.Len() != 2 {
		t.Fatal(err)
	}
	if k := ks.Lookup("aaaaaaaaaaaaaaaa1"); k == nil || k.Name != "a" || !k.Has("search") || k.Has("call") {
		t.Fatalf("lookup: %+v", k)
	}
	if ks.Lookup("aaaaaaaaaaaaaaaa2") != nil || ks.Lookup("") != nil {
		t.Fatal("lookup of a wrong key")
	}
	for _, tc := range []struct{ in, want string }{
		{"", "no keys"},
		{"a short search", "shorter than 16"},
		{"a aaaaaaaaaaaaaaaa1 root", `unknown scope "root"`},
		{"a aaaaaaaaaaaaaaaa1", "3 fields"},
		{"a aaaaaaaaaaaaaaaa1 search\na bbbbbbbbbbbbbbbb2 search", `key name "a" repeats line 1`},
		{"a aaaaaaaaaaaaaaaa1 search\nb aaaaaaaaaaaaaaaa1 call", "the same key as a"},
		{"a sha256:zz search", "64 hex digits"},
	} {
		_, err := serve.ParseKeys([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "aaaaaaaaaaaaaaaa1") {
			t.Errorf("%q: the error holds the key", tc.in)
		}
	}
}

// TestIndexReuse: a second start reuses the index built for the model, and syncing it to a
// changed library embeds only the new tools.
func TestIndexReuse(t *testing.T) {
	dir := t.TempDir()
	mk := func(names ...string) *library.Library {
		l := &library.Library{}
		for _, n := range names {
			l.Tools = append(l.Tools, library.Tool{Name: n, Namespace: "fn", Description: "does " + n,
				InputSchema: json.RawMessage(`{"type": "object"}`), Source: library.Source{Kind: library.KindFunctions}})
		}
		return l
	}
	be, _ := backend.Open("go")
	libPath := filepath.Join(dir, "lib.jsonl")
	state := gateway.StateDir(libPath)
	idx, built, err := gateway.BuildIndex(context.Background(), mk("a", "b", "c"), libPath, stubModel(t), state, be)
	if err != nil || !built {
		t.Fatalf("first build: %v %v", built, err)
	}
	idx2, built, err := gateway.BuildIndex(context.Background(), mk("a", "b", "d"), libPath, stubModel(t), state, be)
	if err != nil || built || idx2 != idx {
		t.Fatalf("second start: %s %v %v", idx2, built, err)
	}
	st, err := store.Open(idx, 0, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g, err := gateway.New(gateway.Options{Library: mk("a", "b", "d"), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if a, c, d, err := g.SyncIndex(); err != nil || a != 1 || c != 0 || d != 1 {
		t.Fatalf("sync: +%d ~%d -%d %v", a, c, d, err)
	}
	if _, ok := st.R.Library().Lookup("fn.d"); !ok {
		t.Fatal("fn.d is not in the index")
	}
	// A function-list tool has no upstream: calling it says so.
	res, err := g.Call(context.Background(), "fn.a", nil, "", "")
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "has no upstream the gateway can call") {
		t.Fatalf("calling a function-list tool: %v %+v", err, res)
	}
}

// FuzzValidate: any arguments against any schema give nil or an error, never a panic, and
// invalid arguments an *ArgumentError.
func FuzzValidate(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"integer","minimum":1}},"required":["a"]}`, `{"a": 0}`)
	f.Add(`{"type":"object","additionalProperties":false}`, `{"x": [1, {"y": null}]}`)
	f.Add(`{"type":"object","properties":{"p":{"type":"array","items":{"type":"string","pattern":"^a+$"}}}}`, `{"p": ["b"]}`)
	f.Add(`{"type":"object"}`, `[]`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		tool := &library.Tool{Name: "t", InputSchema: json.RawMessage(schema)}
		err := gateway.Validate(tool, json.RawMessage(args))
		var ae *gateway.ArgumentError
		if err != nil && !errors.As(err, &ae) && !strings.Contains(err.Error(), "does not compile") {
			t.Fatalf("%s %s: %v", schema, args, err)
		}
		if ae != nil && len(ae.Problems) == 0 {
			t.Fatalf("%s %s: an argument error with no problem", schema, args)
		}
	})
}

// TestIndexText: the text the gateway's index embeds for a tool, when the index is built and
// when it is synced to a changed library, is the library's tool text (library.ToolText).
func TestIndexText(t *testing.T) {
	mk := func(desc string) *library.Library {
		return &library.Library{Tools: []library.Tool{
			{Name: "create_entities", Namespace: "memory", Title: "Create Entities", Description: desc,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"entities":{"type":"array"}},"required":["entities"]}`),
				Source:      library.Source{Kind: library.KindMCP, Server: "memory", Transport: "stdio"}},
			{Name: "issues/list-for-repo", Namespace: "github", Title: "List repository issues",
				Description: "List repository issues\n\nList issues in a repository.\n\nThis endpoint supports the following custom media types.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"owner":{"type":"string"},"per_page":{"type":"integer"},"accept":{"type":"string"}},"required":["owner"]}`),
				Source: library.Source{Kind: library.KindOpenAPI, Method: "GET", Path: "/repos/{owner}/issues",
					Params: []library.Param{{Name: "owner", In: library.InPath}, {Name: "per_page", In: library.InQuery}, {Name: "accept", In: library.InHeader}}}},
			{Name: "get_weather", Description: "Weather now.", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`),
				Source: library.Source{Kind: library.KindFunctions}},
		}}
	}
	check := func(what string, l *library.Library, tl *toolindex.Library) {
		t.Helper()
		for _, tool := range l.Tools {
			i, ok := tl.Lookup(tool.ID())
			if !ok {
				t.Fatalf("%s: %s is not in the index", what, tool.ID())
			}
			if got, want := tl.Tool(i).Text, library.ToolText(tool); got != want {
				t.Errorf("%s: %s: index text\n%q\nwant library.ToolText\n%q", what, tool.ID(), got, want)
			}
		}
	}
	be, _ := backend.Open("go")
	libPath := filepath.Join(t.TempDir(), "lib.jsonl")
	l := mk("Create new entities in the knowledge graph")
	idx, _, err := gateway.BuildIndex(context.Background(), l, libPath, stubModel(t), gateway.StateDir(libPath), be)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(idx, 0, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check("built", l, st.R.Library())
	l = mk("Remember people, places and facts as entities")
	g, err := gateway.New(gateway.Options{Library: l, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if a, c, d, err := g.SyncIndex(); err != nil || a+c+d != 1 {
		t.Fatalf("sync: +%d ~%d -%d %v", a, c, d, err)
	}
	check("synced", l, st.R.Library())
}

// TestIndexPrecision: a bf16 zero-shot index has its own directory beside the fp32 one and
// records its precision, so that queries are embedded alike; an unknown precision is refused.
func TestIndexPrecision(t *testing.T) {
	l := &library.Library{}
	for _, n := range []string{"a", "b"} {
		l.Tools = append(l.Tools, library.Tool{Name: n, Namespace: "fn", Description: "does " + n,
			InputSchema: json.RawMessage(`{"type": "object"}`), Source: library.Source{Kind: library.KindFunctions}})
	}
	be, _ := backend.Open("go")
	libPath := filepath.Join(t.TempDir(), "lib.jsonl")
	state := gateway.StateDir(libPath)
	fp, _, err := gateway.BuildIndexAt(context.Background(), l, libPath, stubModel(t), state, be, export.QuantDefault, "")
	if err != nil {
		t.Fatal(err)
	}
	bf, built, err := gateway.BuildIndexAt(context.Background(), l, libPath, stubModel(t), state, be, export.QuantDefault, "bf16")
	if err != nil || !built || bf == fp {
		t.Fatalf("bf16 index %s (fp32 %s), built %v: %v", bf, fp, built, err)
	}
	for dir, want := range map[string]string{fp: "", bf: "bf16"} {
		var m export.Manifest
		b, err := os.ReadFile(filepath.Join(dir, export.ManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &m); err != nil || m.Precision != want {
			t.Errorf("%s: manifest precision %q, want %q (%v)", dir, m.Precision, want, err)
		}
	}
	if _, _, err := gateway.BuildIndexAt(context.Background(), l, libPath, stubModel(t), state, be, export.QuantDefault, "fp16"); err == nil || !strings.Contains(err.Error(), "fp16") {
		t.Errorf("precision fp16: %v", err)
	}
}
