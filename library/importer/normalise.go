package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Changes counts what NormaliseSchema changed, by kind of change ("type dict→object").
type Changes map[string]int

// Add adds c's counts to a (a may be nil: the result is then a new map).
func (a Changes) Add(c Changes) Changes {
	if len(c) == 0 {
		return a
	}
	if a == nil {
		a = Changes{}
	}
	for k, n := range c {
		a[k] += n
	}
	return a
}

// String lists the changes, most frequent first: "type dict→object ×932, type float→number ×224".
func (a Changes) String() string {
	keys := slices.Collect(maps.Keys(a))
	slices.SortFunc(keys, func(x, y string) int {
		if a[x] != a[y] {
			return a[y] - a[x]
		}
		return strings.Compare(x, y)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, a[k])
	}
	return strings.Join(parts, ", ")
}

// typeNames maps the type names function lists use beside JSON Schema's (Python's dict,
// float, tuple, ...; ToolBench's STRING) to JSON Schema's; "" means any type (the keyword is
// dropped).
var typeNames = map[string]string{
	"object": "object", "dict": "object", "map": "object", "hash": "object", "struct": "object",
	"number": "number", "float": "number", "double": "number", "decimal": "number",
	"integer": "integer", "int": "integer", "long": "integer",
	"string": "string", "str": "string", "text": "string",
	"boolean": "boolean", "bool": "boolean",
	"array": "array", "list": "array", "tuple": "array", "set": "array",
	"null": "null", "none": "null", "nonetype": "null",
	"any": "",
}

// NormaliseSchema returns raw, a tool's input schema as a function list gives it, as valid
// JSON Schema 2020-12, keeping the order of object keys: type names other than JSON Schema's
// (dict, float, tuple, any, STRING, ...) become JSON Schema's, a property's boolean
// "required" moves into its parent's list, an "items" array becomes "prefixItems", a
// property given as a bare type name ("x": "string") becomes a schema, a missing or empty
// schema is an object schema with no properties, and a top-level schema with no type is an
// object. The changes made are counted. An input that is not a JSON object is an error; an
// unknown type name is dropped (any type) and counted.
func NormaliseSchema(raw json.RawMessage) (json.RawMessage, Changes, error) {
	c := Changes{}
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" || s == "{}" {
		if s != "{}" {
			c["missing schema→object"]++
		}
		return json.RawMessage(`{"type":"object","properties":{}}`), c, nil
	}
	n, err := parseNode(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if n.kind != 'o' {
		return nil, nil, errors.New("the schema is not a JSON object")
	}
	normalise(n, c)
	if n.get("type") == nil {
		n.set("type", scalar("object"))
		c["no type→object"]++
	}
	return n.encode(), c, nil
}

func normalise(n *node, c Changes) {
	if n == nil || n.kind != 'o' {
		return
	}
	if t := n.get("type"); t != nil {
		normaliseType(n, t, c)
	}
	if e := n.get("enum"); e != nil && e.kind != 'a' {
		n.set("enum", &node{kind: 'a', arr: []*node{e}})
		c["enum value→list"]++
	}
	if r := n.get("required"); r != nil && r.kind != 'a' {
		n.del("required") // a boolean here is handled by the parent's properties
		if _, ok := r.str(); ok {
			n.set("required", &node{kind: 'a', arr: []*node{r}})
			c["required name→list"]++
		}
	}
	if it := n.get("items"); it != nil && it.kind == 'a' {
		n.del("items")
		n.set("prefixItems", it)
		c["items list→prefixItems"]++
	}
	if p := n.get("properties"); p != nil {
		normaliseProperties(n, p, c)
	}
	for _, k := range []string{"patternProperties", "$defs", "definitions", "dependentSchemas"} {
		if m := n.get(k); m != nil && m.kind == 'o' {
			for _, v := range m.obj {
				normalise(v.val, c)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "additionalItems", "not", "contains", "propertyNames",
		"if", "then", "else", "unevaluatedItems", "unevaluatedProperties"} {
		normalise(n.get(k), c)
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		if l := n.get(k); l != nil && l.kind == 'a' {
			for _, v := range l.arr {
				normalise(v, c)
			}
		}
	}
}

func normaliseType(n, t *node, c Changes) {
	var names []string
	switch t.kind {
	case 's':
		s, ok := t.str()
		if !ok {
			n.del("type")
			c["non-string type→(any)"]++
			return
		}
		names = []string{s}
	case 'a':
		for _, v := range t.arr {
			if s, ok := v.str(); ok {
				names = append(names, s)
			}
		}
	default:
		n.del("type")
		c["non-string type→(any)"]++
		return
	}
	var out []string
	anyType := false
	for _, s := range names {
		j, ok := typeNames[strings.ToLower(strings.TrimSpace(s))]
		switch {
		case !ok:
			c["type "+s+"→(any, unknown)"]++
			anyType = true
		case j == "":
			c["type "+s+"→(any)"]++
			anyType = true
		default:
			if j != s {
				c["type "+s+"→"+j]++
			}
			if !slices.Contains(out, j) {
				out = append(out, j)
			}
		}
	}
	switch {
	case anyType || len(out) == 0:
		n.del("type")
	case len(out) == 1:
		n.set("type", scalar(out[0]))
	default:
		n.set("type", scalar(out))
	}
}

func normaliseProperties(parent, p *node, c Changes) {
	if p.kind != 'o' {
		parent.del("properties")
		c["non-object properties→removed"]++
		return
	}
	for i, m := range p.obj {
		v := m.val
		if s, ok := v.str(); ok { // "x": "string"
			v = object(member{"type", scalar(s)})
			p.obj[i].val = v
			c["bare type→schema"]++
		}
		if v.kind != 'o' {
			continue // true / false are schemas too
		}
		if r := v.get("required"); r != nil && r.kind == 's' && (string(r.raw) == "true" || string(r.raw) == "false") {
			v.del("required")
			c["property required: bool→parent's list"]++
			if string(r.raw) == "true" {
				addRequired(parent, m.key)
			}
		}
		normalise(v, c)
	}
}

func addRequired(n *node, name string) {
	r := n.get("required")
	if r == nil || r.kind != 'a' {
		r = &node{kind: 'a'}
		n.set("required", r)
	}
	for _, v := range r.arr {
		if s, _ := v.str(); s == name {
			return
		}
	}
	r.arr = append(r.arr, scalar(name))
}
