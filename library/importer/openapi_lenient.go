package importer

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"
)

// loadOpenAPIDocs loads the description in b. Strict, or when the description loads whole,
// it is the one document returned (base is it too). Otherwise (lenient) the keywords real
// descriptions use off-spec are read as meant (repairOpenAPI, each repair a note in r) and,
// if the description still does not load, each operation is loaded on its own, with the
// components it references: one that does not load is skipped in r with its spec path and
// the reason. base is then the description without its paths, webhooks and components (its
// servers, info, ...), docs one per operation loaded, in path then method order; when no
// operation loads, the loader's error on the whole description is returned.
func loadOpenAPIDocs(ctx context.Context, b []byte, loc *url.URL, strict bool, r *Report) (base *openapi3.T, docs []*openapi3.T, err error) {
	doc, err := loadOpenAPI(ctx, b, loc)
	if err == nil {
		return doc, []*openapi3.T{doc}, nil
	}
	if strict {
		return nil, nil, err
	}
	var root yaml.Node
	if yaml.Unmarshal(b, &root) != nil || root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, nil, err // not a description at all: the loader's error says why
	}
	top := root.Content[0]
	notes := repairOpenAPI(top)
	if len(notes) > 0 {
		if fixed, merr := yaml.Marshal(top); merr == nil {
			if doc, ferr := loadOpenAPI(ctx, fixed, loc); ferr == nil {
				r.Notes = append(r.Notes, notes...)
				return doc, []*openapi3.T{doc}, nil
			}
		}
	}
	if v := mapValue(top, "openapi"); v == nil || !strings.HasPrefix(v.Value, "3.") {
		return nil, nil, err
	}
	// Operation by operation.
	baseNode := withoutKeys(top, "paths", "webhooks", "components")
	base, berr := loadNode(ctx, baseNode, loc)
	if berr != nil {
		return nil, nil, fmt.Errorf("the description outside its paths and components does not load: %w", berr)
	}
	r.Notes = append(r.Notes, notes...)
	r.note("the description does not load whole (%s): its operations were loaded one by one", loadReason(err))
	paths := mapValue(top, "paths")
	if paths == nil || paths.Kind != yaml.MappingNode || len(paths.Content) == 0 {
		var hooks []string
		if wh := mapValue(top, "webhooks"); wh != nil && wh.Kind == yaml.MappingNode {
			hooks = sortedKeys(wh)
		}
		return nil, nil, noPaths(hooks)
	}
	comps := mapValue(top, "components")
	for _, p := range sortedKeys(paths) {
		item := mapValue(paths, p)
		if item == nil || item.Kind != yaml.MappingNode {
			continue
		}
		shared := withoutKeys(item, lowerMethods...)
		for _, m := range methods {
			op := mapValue(item, strings.ToLower(m))
			if op == nil {
				continue
			}
			one := &yaml.Node{Kind: yaml.MappingNode, Content: append(append([]*yaml.Node{}, shared.Content...), str(strings.ToLower(m)), op)}
			d := withoutKeys(top, "paths", "webhooks", "components")
			d.Content = append(d.Content, str("paths"), &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str(p), one}})
			if c := referenced(comps, one); c != nil {
				d.Content = append(d.Content, str("components"), c)
			}
			doc, oerr := loadNode(ctx, d, loc)
			if oerr != nil {
				r.skip(fmt.Sprintf("%s %s (#/paths/%s/%s)", m, p, pointerEscape(p), strings.ToLower(m)), loadReason(oerr))
				continue
			}
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 { // no operation loads: the description is broken as a whole
		return nil, nil, err
	}
	return base, docs, nil
}

var lowerMethods = func() []string {
	out := make([]string, len(methods))
	for i, m := range methods {
		out[i] = strings.ToLower(m)
	}
	return out
}()

func loadNode(ctx context.Context, n *yaml.Node, loc *url.URL) (*openapi3.T, error) {
	b, err := yaml.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("re-encoding: %w", err)
	}
	return loadOpenAPI(ctx, b, loc)
}

var lineRE = regexp.MustCompile(`line \d+: `)

// loadReason is the loader's error without its decoding preamble and line numbers (those of
// a part of the description re-encoded, not the file's).
func loadReason(err error) string {
	s := err.Error()
	if _, y, ok := strings.Cut(s, "yaml error: "); ok {
		s = y
	}
	s = strings.TrimPrefix(s, "failed to unmarshal data: ")
	s = strings.TrimPrefix(s, "yaml: construct errors: ")
	return lineRE.ReplaceAllString(s, "")
}

// repairOpenAPI rewrites, in the description top, what real descriptions write off-spec
// and is safe to read as meant, and returns a note per repair naming its spec path: an
// `examples` map of Example objects ({name: {value: ...}}, the form parameters and media
// types take) in a schema, where JSON Schema (OpenAPI 3.1) takes a list, becomes the list of
// their values.
func repairOpenAPI(top *yaml.Node) []string {
	var notes []string
	var walk func(n *yaml.Node, ptr string, schema bool)
	eachValue := func(n *yaml.Node, ptr string, schema bool) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], ptr+"/"+pointerEscape(n.Content[i].Value), schema)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s/%d", ptr, i), schema)
			}
		}
	}
	walk = func(n *yaml.Node, ptr string, schema bool) {
		switch {
		case n.Kind == yaml.SequenceNode:
			eachValue(n, ptr, schema)
			return
		case n.Kind != yaml.MappingNode:
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			at := ptr + "/" + pointerEscape(k)
			switch {
			case !schema && k == "schema", !schema && at == "/components/schemas":
				if k == "schema" {
					walk(v, at, true)
				} else {
					eachValue(v, at, true)
				}
			case !schema:
				walk(v, at, false)
			case k == "examples" && v.Kind == yaml.MappingNode:
				list := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
				for j := 0; j+1 < len(v.Content); j += 2 {
					x := v.Content[j+1]
					if val := mapValue(x, "value"); val != nil {
						x = val
					}
					list.Content = append(list.Content, x)
				}
				n.Content[i+1] = list
				notes = append(notes, fmt.Sprintf("#%s: a map of named examples in a schema, which takes a list (JSON Schema's examples): read as the list of their values", at))
			case k == "properties" || k == "patternProperties" || k == "$defs" || k == "definitions" || k == "dependentSchemas":
				eachValue(v, at, true)
			case k == "items" || k == "additionalProperties" || k == "not" || k == "if" || k == "then" || k == "else" ||
				k == "contains" || k == "propertyNames" || k == "unevaluatedItems" || k == "unevaluatedProperties" || k == "additionalItems" ||
				k == "allOf" || k == "anyOf" || k == "oneOf" || k == "prefixItems":
				walk(v, at, true)
			}
		}
	}
	walk(top, "", false)
	return notes
}

// referenced returns the part of components (a mapping of kinds to mappings of names) that
// n references by "#/components/KIND/NAME...", followed transitively; nil when none.
func referenced(components, n *yaml.Node) *yaml.Node {
	if components == nil || components.Kind != yaml.MappingNode {
		return nil
	}
	want := map[[2]string]bool{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if v := n.Content[i+1]; n.Content[i].Value == "$ref" && v.Kind == yaml.ScalarNode {
					rest, ok := strings.CutPrefix(v.Value, "#/components/")
					if !ok {
						continue
					}
					kind, name, _ := strings.Cut(rest, "/")
					name, _, _ = strings.Cut(name, "/")
					k := [2]string{pointerUnescape(kind), pointerUnescape(name)}
					if want[k] {
						continue
					}
					want[k] = true
					walk(mapValue(mapValue(components, k[0]), k[1]))
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	if len(want) == 0 {
		return nil
	}
	out := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(components.Content); i += 2 {
		kind, entries := components.Content[i], components.Content[i+1]
		if entries.Kind != yaml.MappingNode {
			continue
		}
		kept := &yaml.Node{Kind: yaml.MappingNode}
		for j := 0; j+1 < len(entries.Content); j += 2 {
			if want[[2]string{kind.Value, entries.Content[j].Value}] {
				kept.Content = append(kept.Content, entries.Content[j], entries.Content[j+1])
			}
		}
		if len(kept.Content) > 0 {
			out.Content = append(out.Content, kind, kept)
		}
	}
	return out
}

// mapValue returns the value of key in mapping n, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// withoutKeys returns a copy of mapping n without keys.
func withoutKeys(n *yaml.Node, keys ...string) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode}
outer:
	for i := 0; i+1 < len(n.Content); i += 2 {
		for _, k := range keys {
			if n.Content[i].Value == k {
				continue outer
			}
		}
		out.Content = append(out.Content, n.Content[i], n.Content[i+1])
	}
	return out
}

func sortedKeys(n *yaml.Node) []string {
	var out []string
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func pointerUnescape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}
