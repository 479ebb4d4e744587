package importer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolret/toolret/library"
)

func byID(tools []library.Tool) map[string]library.Tool {
	m := map[string]library.Tool{}
	for _, t := range tools {
		m[t.ID()] = t
	}
	return m
}

func TestOpenAPISmall(t *testing.T) {
	tools, r, err := OpenAPI(t.Context(), "testdata/shop.yaml", "shop")
	if err != nil {
		t.Fatal(err)
	}
	checkTools(t, tools, library.KindOpenAPI)
	if got, want := names(tools), []string{"shop.createCategory", "shop.createItems", "shop.getItem", "shop.updateItem", "shop.DELETE /items/{itemId}"}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	if r.Tools != 5 || len(r.Skipped) != 0 || len(r.Notes) != 0 {
		t.Errorf("report %+v", r)
	}
	m := byID(tools)
	for _, c := range []struct {
		id, schema string
		src        library.Source
		title      string
	}{
		{"shop.getItem", `{"type":"object","properties":{"itemId":{"description":"The item's id.","type":"string"},"fields":{"description":"Fields to return.","items":{"type":"string"},"type":"array"},"header_fields":{"type":"string"}},"required":["itemId"]}`,
			library.Source{Kind: "openapi", Origin: "testdata/shop.yaml", Method: "GET", Path: "/items/{itemId}", BaseURL: "https://eu.shop.example/v1", OperationID: "getItem",
				Params: []library.Param{{Name: "itemId", In: "path"}, {Name: "fields", In: "query"}, {Name: "fields", In: "header", Property: "header_fields"}}}, "Get an item"},
		// An object body merged beside the path parameter; 3.0's nullable, boolean
		// exclusiveMinimum and example rewritten; the recursive Category cut.
		{"shop.updateItem", `{"type":"object","properties":{"itemId":{"description":"The item's id.","type":"string"},"name":{"examples":["lamp"],"type":"string"},"price":{"exclusiveMinimum":0,"type":"number"},"note":{"type":["string","null"]},"category":{"properties":{"name":{"type":"string"},"parent":{"description":"(recursive: the same schema as #/components/schemas/Category)"}},"type":"object"}},"required":["itemId","name"]}`,
			library.Source{Kind: "openapi", Origin: "testdata/shop.yaml", Method: "PUT", Path: "/items/{itemId}", BaseURL: "https://eu.shop.example/v1", OperationID: "updateItem",
				Params: []library.Param{{Name: "itemId", In: "path"}}, Body: library.BodyMerged, ContentType: "application/json"}, "Update an item"},
		// A body whose property clashes with a parameter is one property; form data.
		{"shop.createCategory", `{"type":"object","properties":{"name":{"type":"string"},"body":{"properties":{"name":{"type":"string"},"parent":{"description":"(recursive: the same schema as #/components/schemas/Category)"}},"type":"object"}},"required":["name"]}`,
			library.Source{Kind: "openapi", Origin: "testdata/shop.yaml", Method: "POST", Path: "/categories/{name}", BaseURL: "https://eu.shop.example/v1", OperationID: "createCategory",
				Params: []library.Param{{Name: "name", In: "path"}}, Body: "body", ContentType: "application/x-www-form-urlencoded"}, ""},
		// The operation's own server; the operation's parameter overrides the path's.
		{"shop.DELETE /items/{itemId}", `{"type":"object","properties":{"itemId":{"description":"Overrides the path-level one.","type":"integer"}},"required":["itemId"]}`,
			library.Source{Kind: "openapi", Origin: "testdata/shop.yaml", Method: "DELETE", Path: "/items/{itemId}", BaseURL: "https://eu.shop.example/v1",
				Params: []library.Param{{Name: "itemId", In: "path"}}}, "Delete an item"},
	} {
		tool := m[c.id]
		if string(tool.InputSchema) != c.schema {
			t.Errorf("%s: schema\n%s\nwant\n%s", c.id, tool.InputSchema, c.schema)
		}
		b1, _ := json.Marshal(tool.Source)
		b2, _ := json.Marshal(c.src)
		if string(b1) != string(b2) || tool.Title != c.title {
			t.Errorf("%s: source %s title %q, want %s %q", c.id, b1, tool.Title, b2, c.title)
		}
	}
	if g := m["shop.getItem"]; g.Description != "Get an item\n\nReturns one item of the catalogue." || !slices.Equal(g.Tags, []string{"items"}) {
		t.Errorf("getItem: %q %v", g.Description, g.Tags)
	}
	if s := m["shop.createItems"].Source; s.BaseURL != "https://bulk.shop.example" || s.Body != "body" {
		t.Errorf("createItems: %+v", s)
	}
	text, _ := library.Text(m["shop.getItem"], "")
	if want := "shop.getItem: Get an item. Returns one item of the catalogue. Parameters: itemId (string, required): The item's id; fields (array): Fields to return; header_fields (string)"; text != want {
		t.Errorf("text %q, want %q", text, want)
	}
}

func TestOpenAPI31(t *testing.T) {
	tools, r, err := OpenAPI(t.Context(), "testdata/shop31.json", "shop")
	if err != nil {
		t.Fatal(err)
	}
	checkTools(t, tools, library.KindOpenAPI)
	m := byID(tools)
	if got := string(m["shop.placeOrder"].InputSchema); got != `{"type":"object","properties":{"items":{"minItems":1,"prefixItems":[{"type":"string"}],"type":"array"},"express":{"const":true},"total":{"examples":[9.5],"exclusiveMinimum":0,"type":"number"}},"required":["items"]}` {
		t.Errorf("placeOrder: %s", got)
	}
	if got := string(m["shop.GET /orders"].InputSchema); got != `{"type":"object","properties":{"status":{"enum":["open","closed",null],"type":["string","null"]}}}` {
		t.Errorf("GET /orders: %s", got)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "no servers") {
		t.Errorf("notes %v", r.Notes)
	}
	// The schema validates arguments as JSON Schema 2020-12.
	s, _ := library.CompileSchema(m["shop.placeOrder"].InputSchema)
	if s.Validate(map[string]any{"items": []any{"a"}, "total": json.Number("1")}) != nil || s.Validate(map[string]any{"items": []any{}}) == nil {
		t.Error("placeOrder's schema does not validate as it should")
	}
}

func TestOpenAPIErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ spec, want string }{
		{`{"swagger":"2.0","info":{"title":"x","version":"1"},"paths":{}}`, "Swagger 2.0"},
		{`{"openapi":"3.0.0","info":{"title":"x","version":"1"},"paths":{}}`, "no paths"},
		{`{"openapi":"3.0.0","info":{"title":"x","version":"1"},"paths":{"/a":{"get":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"http://127.0.0.1:1/s.json"}}}},"responses":{"200":{"description":"ok"}}}}}}`, "only local files"},
		{`openapi: [`, ""},
	} {
		p := filepath.Join(dir, "spec.json")
		os.WriteFile(p, []byte(c.spec), 0o644)
		_, _, err := OpenAPI(t.Context(), p, "x")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want %q naming the file", c.spec, err, c.want)
		}
	}
	if _, _, err := OpenAPI(t.Context(), "testdata/shop.yaml", "a.b"); err == nil {
		t.Error("a namespace with a dot was taken")
	}
}

// TestOpenAPIBlowUp: schemas that use the next one twice, 40 deep (2^40 objects inlined),
// and a cycle back to the first, import quickly, cut at the size limit.
func TestOpenAPIBlowUp(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.0.0","info":{"title":"x","version":"1"},"paths":{"/a":{"post":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/S0"}}}},"responses":{"200":{"description":"ok"}}}}},"components":{"schemas":{`)
	for i := range 40 {
		fmt.Fprintf(&b, `"S%d":{"type":"object","properties":{"a":{"$ref":"#/components/schemas/S%d"},"b":{"$ref":"#/components/schemas/S%d"}}},`, i, (i+1)%40, (i+1)%40)
	}
	b.WriteString(`"T":{}}}}`)
	start := time.Now()
	tools, _, err := DecodeOpenAPI(t.Context(), []byte(b.String()), "x", "x")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second || len(tools) != 1 || !strings.Contains(string(tools[0].InputSchema), "too large") {
		t.Errorf("%s, %d tools", d, len(tools))
	}
	if n := strings.Count(string(tools[0].InputSchema), `"properties"`); n > maxSchemaObjects+1 {
		t.Errorf("%d schema objects", n)
	}
}

// TestOpenAPIGitHub imports GitHub's REST API description (about a thousand operations).
func TestOpenAPIGitHub(t *testing.T) {
	spec := npmPath(t, "@octokit/openapi/generated/api.github.com.json")
	start := time.Now()
	tools, r, err := OpenAPI(t.Context(), spec, "github")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (%d skipped); %s wall", r, len(r.Skipped), time.Since(start).Round(time.Millisecond))
	if len(tools) < 900 || len(r.Skipped) > 0 {
		t.Fatalf("%d tools, skipped %v", len(tools), r.Skipped)
	}
	checkTools(t, tools, library.KindOpenAPI)
	most := 0
	for _, tool := range tools {
		if strings.Contains(string(tool.InputSchema), "schema cut") {
			t.Errorf("%s: schema cut", tool.ID())
		}
		most = max(most, strings.Count(string(tool.InputSchema), "{"))
	}
	t.Logf("largest input schema: %d objects", most)
	g, ok := byID(tools)["github.repos/get"]
	if !ok || g.Source.Method != "GET" || g.Source.Path != "/repos/{owner}/{repo}" || g.Source.BaseURL != "https://api.github.com" || g.Title != "Get a repository" {
		t.Fatalf("repos/get: %+v", g)
	}
	if p := library.Properties(g.InputSchema); len(p) != 2 || p[0].Name != "owner" || !p[0].Required || p[1].Name != "repo" {
		t.Errorf("repos/get properties %+v", p)
	}
	c := byID(tools)["github.issues/create"]
	if c.Source.Body != library.BodyMerged || !strings.Contains(string(c.InputSchema), `"title"`) {
		t.Errorf("issues/create: %+v %s", c.Source, c.InputSchema)
	}
}
