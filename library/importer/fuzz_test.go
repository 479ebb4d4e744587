package importer

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/toolret/toolret/library"
)

// FuzzOpenAPI: any input gives tools that form a valid library, or an error; never a panic.
func FuzzOpenAPI(f *testing.F) {
	for _, p := range []string{"testdata/shop.yaml", "testdata/shop31.json"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"openapi":"3.1.0","info":{"title":"x","version":"1"},"paths":{"/a/{b}":{"parameters":[{"name":"b","in":"path","schema":{"$ref":"#/components/schemas/S"}}],"post":{"requestBody":{"content":{"text/plain":{"schema":{"type":"string"}}}}}}},"components":{"schemas":{"S":{"anyOf":[{"$ref":"#/components/schemas/S"}]}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tools, _, err := DecodeOpenAPI(t.Context(), b, "spec", "ns")
		if err != nil {
			return
		}
		if err := (&library.Library{Tools: tools}).Check(); err != nil {
			t.Fatalf("imported tools do not form a valid library: %v", err)
		}
	})
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
