package library

import (
	"fmt"
	"strings"
	"text/template"
)

// DefaultTemplate derives a tool's retrieval text as "name: description. parameters: p1 (its
// description), p2 (...)", the parameters part only when the input schema has properties.
// It is the text of the BFCL corpus made from its function list.
const DefaultTemplate = `{{.Name}}: {{.Description}}{{if .Params}}. parameters: {{.ParamList}}{{end}}`

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
