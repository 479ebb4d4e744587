// Package library holds toolret's tool library as tool definitions: each tool keeps its name,
// description, full JSON Schema input schema, namespace, tags and where it came from (an MCP
// server, an OpenAPI operation, a function-tool list). The retrieval text a model embeds is
// derived from a tool by a template (Template; DefaultTemplate).
//
// A library is stored as JSON Lines (Read, Write): an optional header line naming the format
// and the library's template, then one tool per line. Package data loads such a file as a
// dataset with tools and no queries (data.FromLibrary), so every command that takes -data can
// index or serve it. The importers live in package library/importer.
package library

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// Source kinds.
const (
	KindMCP       = "mcp"       // a tool of an MCP server (tools/list)
	KindOpenAPI   = "openapi"   // an operation of an OpenAPI 3 description
	KindFunctions = "functions" // an entry of an OpenAI/Anthropic function-tool list
)

// Parameter locations of an OpenAPI operation (Param.In).
const (
	InPath   = "path"
	InQuery  = "query"
	InHeader = "header"
	InCookie = "cookie"
)

// BodyMerged is Source.Body when the request body is a JSON object whose properties are the
// input schema's properties that are not parameters (Source.Params).
const BodyMerged = "$merged"

// Tool is one tool definition.
type Tool struct {
	// Name is the tool's name at its source (MCP tool name, operationId or "METHOD /path",
	// function name). Unique within a namespace.
	Name string `json:"name"`
	// Namespace groups the tools of one source: the MCP server's name in the mcpServers
	// configuration, the OpenAPI description's or function list's name. Letters, digits, '_'
	// and '-'; may be empty.
	Namespace string `json:"namespace,omitempty"`
	// Title is a short human-readable title (MCP title, OpenAPI summary), if any.
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema (2020-12 unless it says otherwise) of the tool's
	// arguments, an object schema.
	InputSchema json.RawMessage `json:"input_schema"`
	// OutputSchema is the JSON Schema of the tool's structured result, when the source gives one.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Annotations are the source's hints about the tool (MCP ToolAnnotations:
	// readOnlyHint, destructiveHint, ...), as given.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Tags        []string        `json:"tags,omitempty"`
	Source      Source          `json:"source"`
}

// Source says where a tool came from and, for an OpenAPI operation, how to call it.
type Source struct {
	Kind string `json:"kind"`
	// Origin is the file the tool was imported from (mcpServers configuration, OpenAPI
	// description, function list), as given to the importer.
	Origin string `json:"origin,omitempty"`
	// Server is the MCP server's name in the mcpServers configuration; Transport is how it
	// is reached: "stdio", "http" (streamable HTTP) or "sse".
	Server    string `json:"server,omitempty"`
	Transport string `json:"transport,omitempty"`
	// OpenAPI operation: Method (upper case) and Path template as in the description,
	// BaseURL (the first server's URL, variables substituted with their defaults),
	// OperationID when the description has one.
	Method      string `json:"method,omitempty"`
	Path        string `json:"path,omitempty"`
	BaseURL     string `json:"base_url,omitempty"`
	OperationID string `json:"operation_id,omitempty"`
	// Params lists the operation's parameters, each an input schema property.
	Params []Param `json:"params,omitempty"`
	// Body says how the request body is made from the arguments: "" none; BodyMerged the
	// properties not in Params form a JSON object; otherwise the name of the property whose
	// value is the body. ContentType is the body's media type.
	Body        string `json:"body,omitempty"`
	ContentType string `json:"content_type,omitempty"`
}

// Param is an OpenAPI operation parameter Name in a location In (path, query, header,
// cookie), whose value is the input property Property (Name when empty: Property is set when
// two parameters share a name, "header_Accept").
type Param struct {
	Name     string `json:"name"`
	In       string `json:"in"`
	Property string `json:"property,omitempty"`
}

// Prop returns the input property holding p's value.
func (p Param) Prop() string {
	if p.Property != "" {
		return p.Property
	}
	return p.Name
}

// ID is the tool's identifier in the library: "namespace.name", or the name when the
// namespace is empty. Namespaces have no '.', so the first '.' separates them.
func (t Tool) ID() string {
	if t.Namespace == "" {
		return t.Name
	}
	return t.Namespace + "." + t.Name
}

// Library is a set of tool definitions.
type Library struct {
	// Template derives each tool's retrieval text (ParseTemplate); empty: DefaultTemplate.
	Template string
	Tools    []Tool
}

// Index returns a map from tool ID to index in l.Tools.
func (l *Library) Index() map[string]int {
	m := make(map[string]int, len(l.Tools))
	for i, t := range l.Tools {
		m[t.ID()] = i
	}
	return m
}

var namespaceRE = regexp.MustCompile(`^[A-Za-z0-9_-]*$`)

// ValidNamespace reports whether ns can be a namespace: letters, digits, '_' and '-'.
func ValidNamespace(ns string) bool { return namespaceRE.MatchString(ns) }

// Check validates one tool: a name, a valid namespace, a known source kind, and an input
// schema that is a JSON object and compiles as JSON Schema (CompileSchema).
func (t *Tool) Check() error {
	if t.Name == "" {
		return errors.New("tool has no name")
	}
	if !ValidNamespace(t.Namespace) {
		return fmt.Errorf("tool %q: namespace %q: want letters, digits, '_' and '-' only", t.Name, t.Namespace)
	}
	switch t.Source.Kind {
	case KindMCP, KindOpenAPI, KindFunctions:
	case "":
		return fmt.Errorf("tool %q: source has no kind (mcp, openapi, functions)", t.ID())
	default:
		return fmt.Errorf("tool %q: unknown source kind %q (mcp, openapi, functions)", t.ID(), t.Source.Kind)
	}
	if _, err := CompileSchema(t.InputSchema); err != nil {
		return fmt.Errorf("tool %q: input_schema: %w", t.ID(), err)
	}
	if len(t.OutputSchema) > 0 {
		if _, err := CompileSchema(t.OutputSchema); err != nil {
			return fmt.Errorf("tool %q: output_schema: %w", t.ID(), err)
		}
	}
	return nil
}

// Check validates every tool (Tool.Check), that tool IDs are unique and that the template
// parses.
func (l *Library) Check() error {
	if _, err := ParseTemplate(l.Template); err != nil {
		return err
	}
	seen := make(map[string]int, len(l.Tools))
	for i := range l.Tools {
		t := &l.Tools[i]
		if err := t.Check(); err != nil {
			return fmt.Errorf("tool %d: %w", i+1, err)
		}
		if j, ok := seen[t.ID()]; ok {
			return fmt.Errorf("tool %d: duplicate tool %q (first is tool %d)", i+1, t.ID(), j+1)
		}
		seen[t.ID()] = i
	}
	return nil
}
