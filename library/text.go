package library

import (
	"fmt"
	"strings"
	"text/template"
)

// DefaultTemplate is the tool text every path embeds (ToolText): import to a library, a
// library as a dataset (data.FromLibrary) for training, evaluation and export -format index,
// the gateway's index and serve -library. It reads
//
//	ID: Summary Parameters: Args
//
// the tool's ID (namespace.name: the MCP server, the OpenAPI description or the function
// list, then the tool's name), its summary (title and description without OpenAPI
// boilerplate, within SummaryBudget) and its parameters (name, type or short enumeration,
// "required", the first sentence of the description; an OpenAPI operation's standard header,
// credential and pagination parameters left out; within ArgsBudget), the parameters part only
// when there are any. For example
//
//	github.issues/list-for-repo: List repository issues. List issues in a repository. Only
//	open issues will be listed. Parameters: owner (string, required): The account owner of
//	the repository; repo (string, required): ...; state (open|closed|all): Indicates the
//	state of the issues to return; ...
//
// See docs/tool-libraries.md, "The retrieval text".
const DefaultTemplate = `{{.ID}}: {{.Summary}}{{if .Args}} Parameters: {{.Args}}{{end}}`

// BFCLTemplate was the default before DefaultTemplate: "name: description. parameters: p1
// (its description), p2 (...)", the parameters part only when the input schema has
// properties, the whole description and every parameter. It gives exactly the text of BFCL's
// corpus from its function list; a library that wants it names it (import -template).
const BFCLTemplate = `{{.Name}}: {{.Description}}{{if .Params}}. parameters: {{.ParamList}}{{end}}`

// TextData is what a template sees of a tool.
type TextData struct {
	// ID is "namespace.name" (Tool.ID); Name, Namespace, Title, Description and Tags as in
	// the Tool, Description with surrounding white space removed.
	ID, Name, Namespace, Title, Description string
	Tags                                    []string
	// Params are the input schema's top-level properties in schema order; ParamList joins
	// them as "p1 (description), p2 (description)" ("p1" alone when it has no description).
	Params    []Property
	ParamList string
	// Summary is the title and description as the default text gives them (Summarize): OpenAPI
	// boilerplate paragraphs out, Markdown reduced to words, within SummaryBudget.
	Summary string
	// TextParams are Params less an OpenAPI operation's boilerplate parameters (TextParams,
	// BoilerplateParam); Args lists them as the default text does (ArgList), within ArgsBudget.
	TextParams []Property
	Args       string
	// Kind, Server, Method and Path come from the tool's Source.
	Kind, Server, Method, Path string
}

// Template derives retrieval texts from tools. It is a text/template over TextData.
type Template struct {
	src string
	t   *template.Template
}

// ParseTemplate parses a text/template over TextData; "" is DefaultTemplate.
func ParseTemplate(src string) (*Template, error) {
	if src == "" {
		src = DefaultTemplate
	}
	t, err := template.New("tool").Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, fmt.Errorf("template %q: %w", src, err)
	}
	// Check it against a tool with every field set, so a misspelt field fails here, once.
	probe := Tool{Name: "n", Namespace: "ns", Title: "t", Description: "d", Tags: []string{"a"},
		InputSchema: []byte(`{"type":"object","properties":{"p":{"type":"string","description":"d"}}}`)}
	if err := t.Execute(&strings.Builder{}, Data(probe)); err != nil {
		return nil, fmt.Errorf("template %q: %w", src, err)
	}
	return &Template{src: src, t: t}, nil
}

// String returns the template's source.
func (tp *Template) String() string { return tp.src }

// Text returns tool t's retrieval text, with surrounding white space removed.
func (tp *Template) Text(t Tool) (string, error) {
	var b strings.Builder
	if err := tp.t.Execute(&b, Data(t)); err != nil {
		return "", fmt.Errorf("tool %q: template: %w", t.ID(), err)
	}
	return strings.TrimSpace(b.String()), nil
}

// Text returns t's retrieval text under template src ("" is DefaultTemplate).
func Text(t Tool, src string) (string, error) {
	tp, err := ParseTemplate(src)
	if err != nil {
		return "", err
	}
	return tp.Text(t)
}

// Data returns what a template sees of t.
func Data(t Tool) TextData {
	d := TextData{ID: t.ID(), Name: t.Name, Namespace: t.Namespace, Title: t.Title,
		Description: strings.TrimSpace(t.Description), Tags: t.Tags,
		Params: Properties(t.InputSchema),
		Kind:   t.Source.Kind, Server: t.Source.Server, Method: t.Source.Method, Path: t.Source.Path}
	parts := make([]string, len(d.Params))
	for i, p := range d.Params {
		parts[i] = p.Name
		if p.Description != "" {
			parts[i] += " (" + p.Description + ")"
		}
	}
	d.ParamList = strings.Join(parts, ", ")
	d.Summary = Summarize(t.Title, t.Description)
	d.TextParams = TextParams(t, d.Params)
	d.Args = ArgList(d.TextParams)
	return d
}

// Texts returns the retrieval text of every tool of l under l's template.
func (l *Library) Texts() ([]string, error) {
	tp, err := ParseTemplate(l.Template)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(l.Tools))
	for i, t := range l.Tools {
		if out[i], err = tp.Text(t); err != nil {
			return nil, err
		}
	}
	return out, nil
}
