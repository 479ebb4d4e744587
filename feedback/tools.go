package feedback

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolret/toolret/data"
)

// Tools returns every tool of d as a refiner sees it, indexed like d.Tools.
func Tools(d *data.Dataset) []Tool {
	out := make([]Tool, len(d.Tools))
	for i, t := range d.Tools {
		out[i] = ToolOf(i, t)
	}
	return out
}

// ToolOf returns tool t (index i of its dataset) as a refiner sees it: its hierarchy, its
// description (ToolBench text's api_description, else its text) and its parameters (from
// ToolBench text's required_params/optional_params, or the metadata's parameters: a JSON
// schema with "properties" and "required", or required_parameters/optional_parameters lists).
func ToolOf(i int, t data.Tool) Tool {
	f := data.ParseToolBenchText(t.Text)
	out := Tool{Index: i, ID: t.ID, Category: t.Category, Name: t.ToolName, API: t.APIName}
	if out.Name == "" && out.API == "" {
		out.Name = strings.TrimSpace(t.Title)
		if out.Name == "" {
			out.Name = t.ID
		}
	}
	out.Description = f["api_description"]
	if out.Description == "" && f["api_name"] == "" {
		out.Description = strings.TrimSpace(t.Text)
	}
	out.Parameters = strings.Join(parameters(t), "; ")
	return out
}

// parameters lists t's parameters as "name (type, required): description".
func parameters(t data.Tool) []string {
	var out []string
	for _, kind := range []string{"required", "optional"} {
		if list, ok := textList(t.Text, kind+"_params:"); ok {
			out = append(out, params(list, kind)...)
			continue
		}
		if list, ok := t.Metadata[kind+"_parameters"].([]any); ok {
			out = append(out, params(list, kind)...)
		}
	}
	if len(out) > 0 {
		return out
	}
	// An OpenAI-style function schema: {"type": "object", "properties": {...}, "required": [...]}.
	schema, _ := t.Metadata["parameters"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	req := map[string]bool{}
	if r, ok := schema["required"].([]any); ok {
		for _, n := range r {
			req[fmt.Sprint(n)] = true
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		kind := "optional"
		if req[n] {
			kind = "required"
		}
		out = append(out, param(n, str(p["type"]), kind, str(p["description"])))
	}
	return out
}

// textList decodes the JSON list that follows key in a ToolBench-style text.
func textList(text, key string) ([]any, bool) {
	i := strings.Index(text, key)
	if i < 0 {
		return nil, false
	}
	var list []any
	if err := json.NewDecoder(strings.NewReader(text[i+len(key):])).Decode(&list); err != nil {
		return nil, false
	}
	return list, true
}

func params(list []any, kind string) []string {
	var out []string
	for _, e := range list {
		switch p := e.(type) {
		case map[string]any:
			out = append(out, param(str(p["name"]), str(p["type"]), kind, str(p["description"])))
		case string:
			out = append(out, param(p, "", kind, ""))
		}
	}
	return out
}

func param(name, typ, kind, desc string) string {
	s := name + " ("
	if typ != "" {
		s += typ + ", "
	}
	s += kind + ")"
	if desc = strings.TrimSpace(desc); desc != "" {
		s += ": " + desc
	}
	return s
}

func str(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return strings.TrimSpace(s)
	}
	return fmt.Sprint(v)
}

// maxField caps a description or a parameter list in a prompt, in runes.
const maxField = 600

func clip(s string) string {
	r := []rune(s)
	if len(r) <= maxField {
		return s
	}
	return string(r[:maxField]) + "…"
}

// FormatTools renders tools for a prompt: one numbered entry per tool, best first, with its
// id, category, tool and API names, description and parameters (long fields clipped to 600
// characters).
func FormatTools(tools []Tool) string {
	var b strings.Builder
	for i, t := range tools {
		fmt.Fprintf(&b, "%d. ", i+1)
		var head []string
		if t.Category != "" {
			head = append(head, "category: "+t.Category)
		}
		if t.Name != "" {
			head = append(head, "tool: "+t.Name)
		}
		if t.API != "" {
			head = append(head, "API: "+t.API)
		}
		head = append(head, "id: "+t.ID)
		b.WriteString(strings.Join(head, " | "))
		b.WriteByte('\n')
		if t.Description != "" {
			fmt.Fprintf(&b, "   description: %s\n", clip(oneLine(t.Description)))
		}
		if t.Parameters != "" {
			fmt.Fprintf(&b, "   parameters: %s\n", clip(oneLine(t.Parameters)))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
