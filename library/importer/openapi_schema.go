package importer

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// converter turns resolved OpenAPI schemas into self-contained JSON Schema values (maps),
// every $ref inlined. Results are shared between the schemas that use them: callers copy a
// map before changing it.
type converter struct {
	done   map[*openapi3.Schema]done // converted schemas with no recursion cut inside
	inUse  map[*openapi3.Schema]bool // the schemas being converted (the path from the root)
	refOf  map[*openapi3.Schema]string
	cutAny bool // set when a conversion cut a recursion
	// budget is the number of schema objects the tool's input schema may still hold
	// (inlining a schema used in many places can multiply its size); at 0 the rest is cut.
	budget int
}

type done struct {
	v    any
	size int // schema objects in v
}

// maxSchemaObjects bounds the schema objects of one tool's input schema (JSON Schema
// compilers take time quadratic in them here). GitHub's largest has 248
// (tests: TestOpenAPIGitHub).
const maxSchemaObjects = 2500

func newConverter() *converter {
	return &converter{done: map[*openapi3.Schema]done{}, inUse: map[*openapi3.Schema]bool{}, refOf: map[*openapi3.Schema]string{}}
}

// param returns parameter p's schema with the parameter's description, deprecation and
// example.
func (c *converter) param(p *openapi3.Parameter) map[string]any {
	ref := p.Schema
	if ref == nil {
		if _, mt := mediaType(p.Content); mt != nil {
			ref = mt.Schema
		}
	}
	s, _ := c.schema(ref).(map[string]any)
	s = maps.Clone(s)
	if s == nil {
		s = map[string]any{}
	}
	if d := strings.TrimSpace(p.Description); d != "" {
		s["description"] = d
	}
	if p.Deprecated {
		s["deprecated"] = true
	}
	if p.Example != nil && s["examples"] == nil {
		s["examples"] = []any{p.Example}
	}
	return s
}

// schema converts ref: a JSON Schema object (map[string]any), or true for an absent schema.
func (c *converter) schema(ref *openapi3.SchemaRef) any {
	if ref == nil || ref.Value == nil {
		return map[string]any{}
	}
	v := ref.Value
	if v.Always != nil {
		return *v.Always
	}
	if ref.Ref != "" && c.refOf[v] == "" {
		c.refOf[v] = ref.Ref
	}
	if d, ok := c.done[v]; ok && d.size <= c.budget {
		c.budget -= d.size
		return d.v
	}
	if c.budget <= 0 || c.done[v].size > c.budget {
		c.cutAny = true
		return map[string]any{"description": "(schema cut: the tool's input schema is too large)"}
	}
	if c.inUse[v] {
		c.cutAny = true
		name := c.refOf[v]
		if name == "" {
			name = "an enclosing schema"
		}
		return map[string]any{"description": "(recursive: the same schema as " + name + ")"}
	}
	c.inUse[v] = true
	outer := c.cutAny
	c.cutAny = false
	before := c.budget
	c.budget--
	out := c.convert(v)
	delete(c.inUse, v)
	if !c.cutAny {
		c.done[v] = done{out, before - c.budget}
	}
	c.cutAny = c.cutAny || outer
	return out
}

func (c *converter) convert(v *openapi3.Schema) map[string]any {
	local := *v
	local.Properties, local.PatternProperties, local.DependentSchemas = nil, nil, nil
	local.Items, local.Not, local.Contains, local.PropertyNames = nil, nil, nil, nil
	local.If, local.Then, local.Else = nil, nil, nil
	local.AllOf, local.AnyOf, local.OneOf, local.PrefixItems = nil, nil, nil, nil
	local.AdditionalProperties = openapi3.AdditionalProperties{Has: v.AdditionalProperties.Has}
	local.UnevaluatedItems = openapi3.BoolSchema{Has: v.UnevaluatedItems.Has}
	local.UnevaluatedProperties = openapi3.BoolSchema{Has: v.UnevaluatedProperties.Has}
	local.Discriminator, local.XML, local.ExternalDocs, local.Extensions = nil, nil, nil, nil
	m := map[string]any{}
	if b, err := json.Marshal(&local); err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		dec.Decode(&m)
	}
	for k := range m {
		if strings.HasPrefix(k, "x-") {
			delete(m, k)
		}
	}
	fromOpenAPI30(m)
	if len(v.Properties) > 0 {
		p := properties{keys: docOrder(v.Properties), m: make(map[string]any, len(v.Properties))}
		for _, k := range p.keys {
			p.m[k] = c.schema(v.Properties[k])
		}
		m["properties"] = p
	}
	for k, ms := range map[string]openapi3.Schemas{"patternProperties": v.PatternProperties, "dependentSchemas": v.DependentSchemas} {
		if len(ms) > 0 {
			out := make(map[string]any, len(ms))
			for n, p := range ms {
				out[n] = c.schema(p)
			}
			m[k] = out
		}
	}
	for k, r := range map[string]*openapi3.SchemaRef{"items": v.Items, "not": v.Not, "contains": v.Contains,
		"propertyNames": v.PropertyNames, "if": v.If, "then": v.Then, "else": v.Else,
		"additionalProperties": v.AdditionalProperties.Schema, "unevaluatedItems": v.UnevaluatedItems.Schema,
		"unevaluatedProperties": v.UnevaluatedProperties.Schema} {
		if r != nil {
			m[k] = c.schema(r)
		}
	}
	for k, l := range map[string]openapi3.SchemaRefs{"allOf": v.AllOf, "anyOf": v.AnyOf, "oneOf": v.OneOf, "prefixItems": v.PrefixItems} {
		if len(l) > 0 {
			out := make([]any, len(l))
			for i, r := range l {
				out[i] = c.schema(r)
			}
			m[k] = out
		}
	}
	return m
}

// fromOpenAPI30 rewrites OpenAPI 3.0's schema keywords as JSON Schema's: nullable adds
// "null" to the type, a boolean exclusiveMinimum/Maximum makes the bound exclusive, example
// becomes examples.
func fromOpenAPI30(m map[string]any) {
	if n, ok := m["nullable"]; ok {
		delete(m, "nullable")
		if n == true {
			switch t := m["type"].(type) {
			case string:
				if t != "null" {
					m["type"] = []any{t, "null"}
				}
			case []any:
				if !containsAny(t, "null") {
					m["type"] = append(t, "null")
				}
			}
			if e, ok := m["enum"].([]any); ok && !containsAny(e, nil) {
				m["enum"] = append(e, nil)
			}
		}
	}
	for _, b := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		if x, ok := m[b[0]].(bool); ok {
			delete(m, b[0])
			if bound, has := m[b[1]]; x && has {
				m[b[0]] = bound
				delete(m, b[1])
			}
		}
	}
	if ex, ok := m["example"]; ok {
		delete(m, "example")
		if _, has := m["examples"]; !has {
			m["examples"] = []any{ex}
		}
	}
}

func containsAny(l []any, x any) bool {
	for _, v := range l {
		if v == x {
			return true
		}
	}
	return false
}

// properties is a schema's properties, in the order of keys (the description's).
type properties struct {
	keys []string
	m    map[string]any
}

func (p properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range p.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(quote(k))
		b.WriteByte(':')
		v, err := json.Marshal(p.m[k])
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// docOrder returns the names of ms in the order the description lists them (the positions
// the loader recorded, Loader.IncludeOrigin), names without a position last, sorted.
func docOrder(ms openapi3.Schemas) []string {
	keys := slices.Sorted(maps.Keys(ms))
	pos := func(k string) (int, int, bool) {
		if r := ms[k]; r != nil && r.Origin != nil && r.Origin.Key != nil {
			return r.Origin.Key.Line, r.Origin.Key.Column, true
		}
		return 0, 0, false
	}
	slices.SortStableFunc(keys, func(a, b string) int {
		la, ca, oka := pos(a)
		lb, cb, okb := pos(b)
		switch {
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		case la != lb:
			return cmp.Compare(la, lb)
		}
		return cmp.Compare(ca, cb)
	})
	return keys
}
