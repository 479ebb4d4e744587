package library

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func sample() *Library {
	return &Library{Tools: []Tool{
		{Name: "read_file", Namespace: "fs", Title: "Read file", Description: "Read a file.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":" The path. "},"head":{"type":"integer"}},"required":["path"]}`),
			Annotations: json.RawMessage(`{"readOnlyHint":true}`),
			Source:      Source{Kind: KindMCP, Server: "fs", Transport: "stdio", Origin: "mcp.json"}},
		{Name: "repos/get", Namespace: "github", Description: "Get a repository <b>&</b>", Tags: []string{"repos"},
			InputSchema: json.RawMessage(`{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"}}}`),
			Source: Source{Kind: KindOpenAPI, Method: "GET", Path: "/repos/{owner}/{repo}", BaseURL: "https://api.example.com",
				Params: []Param{{Name: "owner", In: InPath}, {Name: "repo", In: InPath}}}},
		{Name: "now", Description: "The time.", InputSchema: json.RawMessage(`{"type":"object"}`), Source: Source{Kind: KindFunctions}},
	}}
}

func TestRoundTrip(t *testing.T) {
	for _, tmpl := range []string{"", "{{.ID}} {{.Description}}"} {
		l := sample()
		l.Template = tmpl
		p := filepath.Join(t.TempDir(), "lib.jsonl")
		if err := Write(p, l); err != nil {
			t.Fatal(err)
		}
		got, err := Read(p)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, l) {
			t.Errorf("template %q: read back\n%+v\nwant\n%+v", tmpl, got, l)
		}
		if c := Diff(l, got); !c.Empty() || c.Unchanged != 3 {
			t.Errorf("Diff of a round trip: %v", c)
		}
		b, _ := os.ReadFile(p)
		if !strings.Contains(string(b), "<b>&</b>") {
			t.Errorf("HTML escaped in the file:\n%s", b)
		}
	}
}

func TestReadErrors(t *testing.T) {
	tool := `{"name":"a","input_schema":{"type":"object"},"source":{"kind":"functions"}}`
	for _, c := range []struct{ in, want string }{
		{tool + "\n{", "lib.jsonl:2: malformed JSON"},
		{tool + "\n\n" + tool, `lib.jsonl:3: duplicate tool "a" (first at line 1)`},
		{`{"name":"a","input_schema":{"type":"dict"},"source":{"kind":"functions"}}`, "lib.jsonl:1: tool \"a\": input_schema:"},
		{`{"name":"a","input_schema":[],"source":{"kind":"functions"}}`, "want a JSON object, got an array"},
		{`{"name":"a","input_schema":{"$ref":"file:///etc/passwd"},"source":{"kind":"functions"}}`, "not followed"},
		{`{"name":"a","input_schema":{},"source":{"kind":"soap"}}`, `unknown source kind "soap"`},
		{`{"name":"a","namespace":"x.y","input_schema":{},"source":{"kind":"mcp"}}`, `namespace "x.y"`},
		{`{"name":"a","descripton":"typo","input_schema":{},"source":{"kind":"mcp"}}`, `unknown field "descripton"`},
		{`{"name":"","input_schema":{},"source":{"kind":"mcp"}}`, "no name"},
		{tool + "\n" + `{"toolret_library":1}`, "must be the first line"},
		{`{"toolret_library":2}`, "version 2"},
		{`{"toolret_library":1,"template":"{{.Nme}}"}`, "lib.jsonl:1: template"},
	} {
		_, err := Decode(strings.NewReader(c.in), "lib.jsonl")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\ngot error %v, want %q", c.in, err, c.want)
		}
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none.jsonl")); err == nil || !strings.Contains(err.Error(), "none.jsonl") {
		t.Errorf("missing file: %v", err)
	}
}

func TestText(t *testing.T) {
	l := sample()
	for _, c := range []struct {
		tmpl string
		want []string
	}{
		{"", []string{"fs.read_file: Read file. Read a file. Parameters: path (string, required): The path; head (integer)",
			"github.repos/get: Get a repository &. Parameters: owner (string); repo (string)", "now: The time."}},
		{BFCLTemplate, []string{"read_file: Read a file.. parameters: path (The path.), head", "repos/get: Get a repository <b>&</b>. parameters: owner, repo", "now: The time."}},
		{"{{.ID}} [{{.Kind}} {{.Method}} {{.Path}}] {{range .Params}}{{.Name}}:{{.Type}}{{if .Required}}!{{end}} {{end}}",
			[]string{"fs.read_file [mcp  ] path:string! head:integer", "github.repos/get [openapi GET /repos/{owner}/{repo}] owner:string repo:string", "now [functions  ]"}},
	} {
		l.Template = c.tmpl
		got, err := l.Texts()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("template %q:\ngot  %q\nwant %q", c.tmpl, got, c.want)
		}
	}
	if _, err := Text(l.Tools[0], "{{.Bogus}}"); err == nil {
		t.Error("a template naming an unknown field parsed")
	}
}

func TestDiffMerge(t *testing.T) {
	old := sample()
	imp := &Library{Tools: []Tool{old.Tools[0], old.Tools[0]}}
	imp.Tools[0].InputSchema = json.RawMessage(`{ "required":["path"], "properties":{"head":{"type":"integer"},"path":{"description":" The path. ","type":"string"}},"type":"object"}`)
	imp.Tools[1].Name = "write_file"
	if c := Diff(old, imp); !reflect.DeepEqual(c.Added, []string{"fs.write_file"}) || len(c.Changed) != 0 || c.Unchanged != 1 ||
		!reflect.DeepEqual(c.Removed, []string{"github.repos/get", "now"}) {
		t.Errorf("Diff: %+v", c)
	}
	m := Merge(old, imp)
	var ids []string
	for _, x := range m.Tools {
		ids = append(ids, x.ID())
	}
	if want := []string{"github.repos/get", "now", "fs.read_file", "fs.write_file"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("Merge: %v, want %v", ids, want)
	}
	// A source that now has no tools removes its old ones when named as covered.
	m = Merge(old, &Library{}, GroupOf(KindOpenAPI, "github"))
	if c := Diff(old, m); !reflect.DeepEqual(c.Removed, []string{"github.repos/get"}) || c.Unchanged != 2 {
		t.Errorf("Merge of an emptied source: %+v", c)
	}
	imp.Tools[0].Description = "changed"
	if c := Diff(old, imp); !reflect.DeepEqual(c.Changed, []string{"fs.read_file"}) {
		t.Errorf("Diff misses a changed description: %+v", c)
	}
}
