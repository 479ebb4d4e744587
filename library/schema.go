package library

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaURL is the location a schema is compiled under; references to other documents are
// refused (noLoader), so nothing is read from disk or the network.
const schemaURL = "urn:toolret:input-schema"

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("reference to another document %s: not followed (a tool schema must be self-contained)", url)
}

// CompileSchema compiles raw as JSON Schema (draft 2020-12 unless its $schema names another
// draft) and returns the compiled schema, which validates arguments (Schema.Validate on a
// value decoded by jsonschema.UnmarshalJSON). raw must be a JSON object; references to other
// documents are refused.
func CompileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("missing")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, fmt.Errorf("want a JSON object, got %s", kindOf(doc))
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), schemaURL, "schema"))
	}
	return s, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return "a number"
	}
}

// Property is one top-level property of an object input schema.
type Property struct {
	Name, Type, Description string
	Required                bool
	// Enum is the property's enumeration, if any: strings as they are, other values as JSON.
	Enum []string
}

// Properties returns the top-level properties of input schema raw in the order the schema
// lists them, with their type ("string", "integer|null", ...; empty when not given),
// description (surrounding white space removed), enumeration and whether they are required. A malformed
// schema has none.
func Properties(raw json.RawMessage) []Property {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(raw, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	names, err := objectKeys(s.Properties)
	if err != nil {
		return nil
	}
	var props map[string]struct {
		Type        json.RawMessage `json:"type"`
		Description any             `json:"description"`
		Enum        json.RawMessage `json:"enum"`
	}
	if json.Unmarshal(s.Properties, &props) != nil {
		// A property schema may be a boolean (true/false) in 2020-12.
		props = nil
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	out := make([]Property, 0, len(names))
	for _, n := range names {
		p := Property{Name: n, Required: req[n]}
		if v, ok := props[n]; ok {
			p.Type = typeString(v.Type)
			if d, ok := v.Description.(string); ok {
				p.Description = strings.TrimSpace(d)
			}
			var enum []json.RawMessage
			_ = json.Unmarshal(v.Enum, &enum) // not a list: no enumeration
			for _, e := range enum {
				var s string
				if json.Unmarshal(e, &s) != nil {
					s = string(bytes.TrimSpace(e))
				}
				p.Enum = append(p.Enum, s)
			}
		}
		out = append(out, p)
	}
	return out
}

func typeString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var l []string
	if json.Unmarshal(raw, &l) == nil {
		return strings.Join(l, "|")
	}
	return ""
}

// objectKeys returns the keys of JSON object raw in document order, without duplicates.
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	var keys []string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := tok.(string)
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}
