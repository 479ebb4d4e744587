package importer

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret/library"
)

// openAPISeeds are small descriptions (a fuzzer's input is mutated and minimised byte by
// byte: a seed of kilobytes makes each new input cost seconds to minimise) covering
// parameters, request bodies, references, a recursive schema, 3.1 webhooks and YAML.
var openAPISeeds = []string{
	`{"openapi":"3.0.3","info":{"title":"p","version":"1"},"servers":[{"url":"https://p.invalid/v1"}],"paths":{"/pets/{id}":{"get":{"operationId":"getPet","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"integer"}},{"name":"q","in":"query","schema":{"type":"string"}}]}}}}`,
	`{"openapi":"3.0.3","info":{"title":"p","version":"1"},"paths":{"/pets":{"post":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Pet"},"examples":{"a":{"value":{"name":"x"}}}}}}}}},"components":{"schemas":{"Pet":{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}}}}`,
	`{"openapi":"3.1.0","info":{"title":"x","version":"1"},"paths":{"/a/{b}":{"parameters":[{"name":"b","in":"path","schema":{"$ref":"#/components/schemas/S"}}],"post":{"requestBody":{"content":{"text/plain":{"schema":{"type":"string"}}}}}}},"components":{"schemas":{"S":{"anyOf":[{"$ref":"#/components/schemas/S"}]}}}}`,
	`{"openapi":"3.1.0","info":{"title":"w","version":"1"},"webhooks":{"new":{"post":{"requestBody":{"content":{"application/json":{"schema":{"type":"object"}}}}}}}}`,
	"openapi: 3.0.0\ninfo: {title: y, version: '1'}\npaths:\n  /x:\n    get:\n      summary: Get x\n      parameters:\n        - {name: h, in: header, schema: {type: boolean}}\n",
}

// FuzzOpenAPI: any input gives tools that form a valid library, or an error; never a panic.
// The seeds are small (openAPISeeds) so that the fuzzer explores: make fuzz bounds the
// minimisation of each new input too.
func FuzzOpenAPI(f *testing.F) {
	for _, s := range openAPISeeds {
		f.Add([]byte(s))
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, b []byte) {
		tools, _, err := DecodeOpenAPI(ctx, b, "spec", "ns")
		if err != nil {
			return
		}
		if err := (&library.Library{Tools: tools}).Check(); err != nil {
			t.Fatalf("imported tools do not form a valid library: %v", err)
		}
	})
}

// TestOpenAPISeeds: every fuzz seed imports (the seeds reach the importer's paths, not its
// first error).
func TestOpenAPISeeds(t *testing.T) {
	for i, s := range openAPISeeds {
		tools, _, err := DecodeOpenAPI(t.Context(), []byte(s), "spec", "ns")
		if err != nil {
			if i == 3 && strings.Contains(err.Error(), "webhooks") {
				continue // a webhooks-only 3.1 file is refused, saying why
			}
			t.Errorf("seed %d: %v", i, err)
		} else if len(tools) == 0 {
			t.Errorf("seed %d: no tools", i)
		}
	}
}

// FuzzNormaliseSchema: the result of a JSON object is valid JSON, an object, and normalising
// it again changes nothing.
func FuzzNormaliseSchema(f *testing.F) {
	for _, s := range []string{`{"type":"dict","properties":{"a":{"type":"float"},"b":{"type":"tuple","items":[{"type":"str"}]}}}`,
		`{"properties":{"x":"string","y":{"required":true,"type":["Any","int"]}},"required":"x"}`, `{}`, `{"enum":1,"anyOf":[{"type":"set"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, _, err := NormaliseSchema(b)
		if err != nil {
			return
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s: result %s is not a JSON object: %v", b, out, err)
		}
		again, c, err := NormaliseSchema(out)
		if err != nil || string(again) != string(out) || len(c) != 0 {
			t.Fatalf("%s: normalised %s, again %s %v %v", b, out, again, c, err)
		}
	})
}

// FuzzMCPTools: any tools/list result, as an MCP server may send it, gives tools that are
// each valid (Tool.Check) with their schemas kept as sent, or skipped with a reason; never a
// panic. It runs what SessionTools does with each listed tool, without a session.
func FuzzMCPTools(f *testing.F) {
	for _, s := range []string{
		`{"tools":[{"name":"echo","description":"Echo","inputSchema":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}},"required":["z"]},"annotations":{"readOnlyHint":true}}]}`,
		`{"tools":[{"name":"t","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"sum":{"type":"number"}}},"title":"T"},{"name":"t","inputSchema":{}}],"nextCursor":"x"}`,
		`{"tools":[{"name":"","inputSchema":[]},{"name":"r","inputSchema":{"$ref":"#/$defs/a","$defs":{"a":{"type":"object"}}}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		raw := &rawTools{}
		raw.result(b)
		var res mcp.ListToolsResult
		if json.Unmarshal(b, &res) != nil {
			return
		}
		for _, mt := range res.Tools {
			if mt == nil || mt.Name == "" {
				continue
			}
			rt, sent := raw.get(mt.Name)
			tool, err := mcpTool(mt, rt, sent, "ns", "server", "stdio", "cfg.json")
			if err != nil {
				continue
			}
			if err := tool.Check(); err != nil {
				t.Fatalf("%s: tool %q accepted but invalid: %v", b, mt.Name, err)
			}
			if sent && len(rt.InputSchema) > 0 && string(rt.InputSchema) != "null" {
				if want, err := compactJSON(rt.InputSchema); err == nil && string(tool.InputSchema) != string(want) {
					t.Fatalf("%s: input schema %s, sent %s", b, tool.InputSchema, want)
				}
			}
		}
	})
}
