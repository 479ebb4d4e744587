package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/toolret/toolret/library"
)

// Functions imports the function-tool list in file path (DecodeFunctions) into namespace.
func Functions(path, namespace string) ([]library.Tool, Report, error) {
	start := time.Now()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, Report{}, fmt.Errorf("-functions %w", err)
	}
	tools, r, err := DecodeFunctions(b, path, namespace)
	if err != nil {
		return nil, r, fmt.Errorf("-functions %s: %w", path, err)
	}
	r.Elapsed = time.Since(start)
	return tools, r, nil
}

// fnEntry is one entry of a function list in any of the shapes DecodeFunctions reads.
type fnEntry struct {
	Type        string          `json:"type"`
	Function    *fnEntry        `json:"function"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	InputSchema json.RawMessage `json:"input_schema"`
	InputCamel  json.RawMessage `json:"inputSchema"`
}

// DecodeFunctions reads a function-tool list: a JSON array (or an object holding it under
// "tools" or "functions") whose entries are OpenAI chat tools
// {"type":"function","function":{"name","description","parameters"}}, OpenAI Responses or
// legacy functions {"name","description","parameters"}, or Anthropic tools
// {"name","description","input_schema"} (MCP's "inputSchema" too). Entries of another type
// (a provider's built-in tools) are skipped and counted. Each schema is normalised to valid
// JSON Schema (NormaliseSchema; the report counts the changes) and must then compile
// (library.CompileSchema): one that does not is skipped with the reason. origin is recorded
// in each tool's Source.
func DecodeFunctions(b []byte, origin, namespace string) ([]library.Tool, Report, error) {
	r := Report{Kind: library.KindFunctions, Name: namespace, Origin: origin, Group: library.GroupOf(library.KindFunctions, namespace)}
	if !library.ValidNamespace(namespace) {
		return nil, r, fmt.Errorf("namespace %q: want letters, digits, '_' and '-' only", namespace)
	}
	entries, err := functionEntries(b)
	if err != nil {
		return nil, r, err
	}
	seen := map[string]bool{}
	var tools []library.Tool
	for i, e := range entries {
		if e.Function != nil {
			if e.Type != "" && e.Type != "function" {
				r.skip(fmt.Sprintf("entry %d", i+1), fmt.Sprintf("type %q is not a function", e.Type))
				continue
			}
			e = *e.Function
		} else if e.Type != "" && e.Type != "function" && e.Type != "custom" {
			r.skip(fmt.Sprintf("entry %d (%s)", i+1, e.Name), fmt.Sprintf("type %q is not a function", e.Type))
			continue
		}
		name := strings.TrimSpace(e.Name)
		if name == "" {
			r.skip(fmt.Sprintf("entry %d", i+1), "no name")
			continue
		}
		if seen[name] {
			r.skip(fmt.Sprintf("entry %d (%s)", i+1, name), "duplicate name")
			continue
		}
		schema := firstNonEmpty(e.Parameters, e.InputSchema, e.InputCamel)
		norm, c, err := NormaliseSchema(schema)
		if err == nil {
			_, err = library.CompileSchema(norm)
		}
		if err != nil {
			r.skip(fmt.Sprintf("entry %d (%s)", i+1, name), "input schema: "+err.Error())
			continue
		}
		if len(c) > 0 {
			r.Normalised++
			r.Changes = r.Changes.Add(c)
		}
		seen[name] = true
		tools = append(tools, library.Tool{Name: name, Namespace: namespace, Description: e.Description,
			InputSchema: norm, Source: library.Source{Kind: library.KindFunctions, Origin: origin}})
	}
	r.Tools = len(tools)
	return tools, r, nil
}

func functionEntries(b []byte) ([]fnEntry, error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var wrap struct {
			Tools     json.RawMessage `json:"tools"`
			Functions json.RawMessage `json:"functions"`
		}
		if err := json.Unmarshal(b, &wrap); err != nil {
			return nil, fmt.Errorf("malformed JSON: %w", err)
		}
		switch {
		case len(wrap.Tools) > 0:
			b = wrap.Tools
		case len(wrap.Functions) > 0:
			b = wrap.Functions
		default:
			return nil, errors.New(`want a JSON array of function tools, or an object with "tools" or "functions"`)
		}
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		return nil, fmt.Errorf("want a JSON array of function tools: %w", err)
	}
	entries := make([]fnEntry, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &entries[i]); err != nil {
			return nil, fmt.Errorf("entry %d: want an object with a name: %w", i+1, err)
		}
	}
	return entries, nil
}

func firstNonEmpty(raws ...json.RawMessage) json.RawMessage {
	for _, r := range raws {
		if len(bytes.TrimSpace(r)) > 0 {
			return r
		}
	}
	return nil
}
