package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/toolret/toolret/library"
)

// methods are the HTTP methods of OpenAPI operations, in the order their tools are listed.
var methods = []string{"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"}

// OpenAPIOptions are the options of an OpenAPI import.
type OpenAPIOptions struct {
	// Strict refuses a description that does not load whole (an operation the loader
	// cannot read, an examples map in a schema, ...). Otherwise such a description is read
	// leniently: the keywords real descriptions use off-spec read as meant, and an operation
	// that still does not load skipped with its spec path and the reason (Report.Skipped).
	Strict bool
}

// OpenAPI imports the OpenAPI 3.0 or 3.1 description in file path (JSON or YAML) into
// namespace: one tool per operation (DecodeOpenAPI), leniently. References to other local
// files are followed; references to URLs are refused.
func OpenAPI(ctx context.Context, path, namespace string) ([]library.Tool, Report, error) {
	return OpenAPIWith(ctx, path, namespace, OpenAPIOptions{})
}

// OpenAPIWith is OpenAPI with options o.
func OpenAPIWith(ctx context.Context, path, namespace string, o OpenAPIOptions) ([]library.Tool, Report, error) {
	start := time.Now()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, Report{}, fmt.Errorf("-openapi %w", err)
	}
	loc, err := filepath.Abs(path)
	if err != nil {
		return nil, Report{}, fmt.Errorf("-openapi %s: %w", path, err)
	}
	tools, r, err := decodeOpenAPI(ctx, b, &url.URL{Path: filepath.ToSlash(loc)}, path, namespace, o)
	if err != nil {
		return nil, r, fmt.Errorf("-openapi %s: %w", path, err)
	}
	r.Elapsed = time.Since(start)
	return tools, r, nil
}

// DecodeOpenAPI reads an OpenAPI 3.0 or 3.1 description (JSON or YAML) from b, with every
// $ref resolved inside it (references to other documents are refused), into tools of
// namespace, one per operation, in path order then method order (GET, PUT, POST, DELETE,
// ...): named by its operationId or "METHOD /path"; described by its summary (also the
// title) and description; its input schema an object whose properties are the operation's
// parameters (path-level ones included; a schema with the parameter's description) and its
// JSON request body: the body's properties merged in when it is an object whose property
// names no parameter has (Source.Body library.BodyMerged), else one property "body". Its
// Source records method, path, base URL (the first server's, variables at their defaults)
// and where each parameter goes. OpenAPI 3.0 schema keywords become JSON Schema's (nullable,
// boolean exclusiveMinimum/Maximum, example); a recursive schema is cut where it recurs.
// A description that does not load whole is read leniently (OpenAPIOptions).
func DecodeOpenAPI(ctx context.Context, b []byte, origin, namespace string) ([]library.Tool, Report, error) {
	return decodeOpenAPI(ctx, b, nil, origin, namespace, OpenAPIOptions{})
}

// DecodeOpenAPIWith is DecodeOpenAPI with options o.
func DecodeOpenAPIWith(ctx context.Context, b []byte, origin, namespace string, o OpenAPIOptions) ([]library.Tool, Report, error) {
	return decodeOpenAPI(ctx, b, nil, origin, namespace, o)
}

func decodeOpenAPI(ctx context.Context, b []byte, loc *url.URL, origin, namespace string, o OpenAPIOptions) ([]library.Tool, Report, error) {
	r := Report{Kind: library.KindOpenAPI, Name: namespace, Origin: origin, Group: library.GroupOf(library.KindOpenAPI, namespace)}
	if !library.ValidNamespace(namespace) {
		return nil, r, fmt.Errorf("namespace %q: want letters, digits, '_' and '-' only", namespace)
	}
	doc, docs, err := loadOpenAPIDocs(ctx, b, loc, o.Strict, &r)
	if err != nil {
		return nil, r, err
	}
	if len(docs) == 1 && docs[0] == doc && (doc.Paths == nil || doc.Paths.Len() == 0) ||
		len(docs) == 0 && len(r.Skipped) == 0 {
		return nil, r, noPaths(slices.Sorted(maps.Keys(doc.Webhooks)))
	}
	base := serverURL(doc.Servers)
	if base == "" {
		r.note("no servers: the tools have no base URL (give one where they are called)")
	} else if u, err := url.Parse(base); err != nil || !u.IsAbs() {
		r.note("server URL %q is relative: a base URL must be given where the tools are called", base)
	}
	seen := map[string]string{}
	var tools []library.Tool
	conv := newConverter() // shared: a schema used by many operations is converted once
	for _, doc := range docs {
		tools = operationTools(conv, doc, base, namespace, origin, seen, &r, tools)
	}
	r.Tools = len(tools)
	return tools, r, nil
}

// operationTools appends to tools a tool per operation of doc, skipping in r those that do
// not convert; seen maps the names given so far to their operations.
func operationTools(conv *converter, doc *openapi3.T, base, namespace, origin string, seen map[string]string, r *Report, tools []library.Tool) []library.Tool {
	if doc.Paths == nil {
		return tools
	}
	paths := doc.Paths.Map()
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		item := paths[p]
		if item == nil {
			continue
		}
		for _, m := range methods {
			op := item.GetOperation(m)
			if op == nil {
				continue
			}
			at := m + " " + p
			t, err := operationTool(conv, op, item, m, p, namespace, origin)
			if err == nil {
				_, err = library.CompileSchema(t.InputSchema)
			}
			if err != nil {
				r.skip(at, err.Error())
				continue
			}
			if prev, dup := seen[t.Name]; dup {
				r.note("%s: operationId %q also names %s: named %q", at, t.Name, prev, at)
				t.Name = at
			}
			seen[t.Name] = at
			if op.Servers != nil {
				t.Source.BaseURL = serverURL(*op.Servers)
			}
			if t.Source.BaseURL == "" {
				t.Source.BaseURL = serverURL(item.Servers)
			}
			if t.Source.BaseURL == "" {
				t.Source.BaseURL = base
			}
			tools = append(tools, t)
		}
	}
	return tools
}

// noPaths is the error for a description without paths, whose webhooks are named.
func noPaths(webhooks []string) error {
	if len(webhooks) == 0 {
		return errors.New("no paths")
	}
	return fmt.Errorf("no paths, only %d webhooks (%s): webhooks describe requests the API sends to its subscribers, not operations to call, so there is nothing to import as tools", len(webhooks), strings.Join(webhooks, ", "))
}

func loadOpenAPI(ctx context.Context, b []byte, loc *url.URL) (*openapi3.T, error) {
	var probe struct {
		OpenAPI string `json:"openapi" yaml:"openapi"`
		Swagger string `json:"swagger" yaml:"swagger"`
	}
	l := openapi3.NewLoader()
	l.Context = ctx
	// The positions of schema properties, to keep their order (docOrder).
	l.IncludeOrigin = true
	if loc != nil { // a file: references to other local files are followed
		l.IsExternalRefsAllowed = true
		l.ReadFromURIFunc = localOnly
	}
	var doc *openapi3.T
	var err error
	if loc != nil {
		doc, err = l.LoadFromDataWithPath(b, loc)
	} else {
		doc, err = l.LoadFromData(b)
	}
	if err != nil {
		return nil, err
	}
	probe.OpenAPI = doc.OpenAPI
	if !strings.HasPrefix(probe.OpenAPI, "3.") {
		return nil, fmt.Errorf("openapi version %q: want an OpenAPI 3.0 or 3.1 description (Swagger 2.0 is not read)", probe.OpenAPI)
	}
	return doc, nil
}

// localOnly reads referenced files from disk and refuses URLs with a scheme or host.
func localOnly(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
	if u.Scheme != "" && u.Scheme != "file" || u.Host != "" {
		return nil, fmt.Errorf("reference to %s: only local files are read", u.Redacted())
	}
	return os.ReadFile(filepath.FromSlash(u.Path))
}

// serverURL is the first server's URL with its variables at their defaults.
func serverURL(servers openapi3.Servers) string {
	if len(servers) == 0 || servers[0] == nil {
		return ""
	}
	s := servers[0]
	u := s.URL
	for name, v := range s.Variables {
		if v != nil {
			u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
		}
	}
	return strings.TrimSuffix(u, "/")
}

func operationTool(conv *converter, op *openapi3.Operation, item *openapi3.PathItem, method, path, namespace, origin string) (library.Tool, error) {
	t := library.Tool{Name: op.OperationID, Namespace: namespace, Title: strings.TrimSpace(op.Summary),
		Tags: slices.Clip(op.Tags), Source: library.Source{Kind: library.KindOpenAPI, Origin: origin,
			Method: method, Path: path, OperationID: op.OperationID}}
	if t.Name == "" {
		t.Name = method + " " + path
	}
	if len(t.Tags) == 0 {
		t.Tags = nil
	}
	t.Description = t.Title
	if d := strings.TrimSpace(op.Description); d != "" && d != t.Title {
		if t.Description != "" {
			t.Description += "\n\n"
		}
		t.Description += d
	}
	c := conv
	c.budget = maxSchemaObjects
	props := map[string]any{}
	var order, required []string // property names in parameter order, then the body's
	for _, p := range parameters(item.Parameters, op.Parameters) {
		prop := p.Name
		if _, clash := props[prop]; clash {
			prop = p.In + "_" + p.Name
		}
		props[prop] = c.param(p)
		order = append(order, prop)
		if p.Required || p.In == openapi3.ParameterInPath {
			required = append(required, prop)
		}
		lp := library.Param{Name: p.Name, In: p.In}
		if prop != p.Name {
			lp.Property = prop
		}
		t.Source.Params = append(t.Source.Params, lp)
	}
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		rb := op.RequestBody.Value
		ct, mt := mediaType(rb.Content)
		if mt != nil {
			t.Source.ContentType = ct
			body, _ := c.schema(mt.Schema).(map[string]any)
			body = maps.Clone(body) // c's results are shared
			if body == nil {
				body = map[string]any{}
			}
			if d := strings.TrimSpace(rb.Description); d != "" && body["description"] == nil {
				body["description"] = d
			}
			if bp, ok := body["properties"].(properties); ok && mergeable(body, props) {
				for _, k := range bp.keys {
					props[k] = bp.m[k]
					order = append(order, k)
				}
				if rb.Required {
					if req, ok := body["required"].([]any); ok {
						for _, x := range req {
							if s, ok := x.(string); ok {
								required = append(required, s)
							}
						}
					}
				}
				t.Source.Body = library.BodyMerged
			} else {
				name := "body"
				for props[name] != nil {
					name = "request_" + name
				}
				props[name] = body
				order = append(order, name)
				if rb.Required {
					required = append(required, name)
				}
				t.Source.Body = name
			}
		}
	}
	var err error
	t.InputSchema, err = objectSchema(props, order, required)
	return t, err
}

// objectSchema returns the object schema with properties props, listed in order, and
// required.
func objectSchema(props map[string]any, order, required []string) (json.RawMessage, error) {
	pn := object()
	for _, k := range order {
		b, err := json.Marshal(props[k])
		if err != nil {
			return nil, fmt.Errorf("input schema: property %q: %w", k, err)
		}
		v, err := parseNode(b)
		if err != nil {
			return nil, fmt.Errorf("input schema: property %q: %w", k, err)
		}
		pn.set(k, v)
	}
	s := object(member{"type", scalar("object")}, member{"properties", pn})
	if len(required) > 0 {
		s.set("required", scalar(required))
	}
	return s.encode(), nil
}

// parameters merges path-level and operation parameters (the operation's win by name and
// location), in their order.
func parameters(lists ...openapi3.Parameters) []*openapi3.Parameter {
	var out []*openapi3.Parameter
	idx := map[[2]string]int{}
	for _, l := range lists {
		for _, pr := range l {
			if pr == nil || pr.Value == nil || pr.Value.Name == "" {
				continue
			}
			p := pr.Value
			k := [2]string{p.Name, p.In}
			if i, ok := idx[k]; ok {
				out[i] = p
				continue
			}
			idx[k] = len(out)
			out = append(out, p)
		}
	}
	return out
}

// mediaType picks the request body's JSON media type (application/json, then any +json),
// else form data, else the first by name.
func mediaType(c openapi3.Content) (string, *openapi3.MediaType) {
	if len(c) == 0 {
		return "", nil
	}
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rank := func(k string) int {
		k = strings.ToLower(strings.TrimSpace(strings.Split(k, ";")[0]))
		switch {
		case k == "application/json":
			return 0
		case strings.HasSuffix(k, "+json") || strings.HasSuffix(k, "/json"):
			return 1
		case k == "application/x-www-form-urlencoded" || k == "multipart/form-data":
			return 2
		}
		return 3
	}
	slices.SortStableFunc(keys, func(a, b string) int { return rank(a) - rank(b) })
	return keys[0], c[keys[0]]
}

// mergeable reports whether object schema body can have its properties merged beside the
// parameters: no name in common, and nothing that constrains the object as a whole.
func mergeable(body map[string]any, params map[string]any) bool {
	if t, ok := body["type"]; ok && t != "object" {
		return false
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "not", "if", "patternProperties", "additionalProperties", "unevaluatedProperties"} {
		if _, ok := body[k]; ok {
			return false
		}
	}
	bp, _ := body["properties"].(properties)
	for k := range bp.m {
		if _, ok := params[k]; ok {
			return false
		}
	}
	return true
}
