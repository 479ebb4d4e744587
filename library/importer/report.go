// Package importer imports tool definitions into a toolret tool library (package library)
// from MCP servers (the mcpServers configuration MCP clients use; tools/list over stdio or
// streamable HTTP), OpenAPI 3.0/3.1 descriptions (one tool per operation) and OpenAI or
// Anthropic function-tool lists (schemas normalised to valid JSON Schema). Every imported
// input schema compiles as JSON Schema (library.CompileSchema).
package importer

import (
	"fmt"
	"strings"
	"time"
)

// Report says what one source gave.
type Report struct {
	// Kind is the source kind (library.KindMCP, ...), Name its namespace (the MCP server's
	// name), Origin the file it was read from, Group the library group it covers
	// (library.GroupOf), which a re-import replaces (library.Merge).
	Kind, Name, Origin, Group string
	// Tools counts the tools imported.
	Tools int
	// Normalised counts the tools whose schema NormaliseSchema changed, Changes what changed.
	Normalised int
	Changes    Changes
	// Skipped lists the entries not imported, each "what: why".
	Skipped []string
	// Notes are other things worth saying (a missing base URL, ...).
	Notes   []string
	Elapsed time.Duration
}

func (r *Report) skip(what, why string) { r.Skipped = append(r.Skipped, what+": "+why) }

func (r *Report) note(format string, a ...any) { r.Notes = append(r.Notes, fmt.Sprintf(format, a...)) }

// String is one line: "functions bfcl/functions.json: 894 tools in 95ms; 894 schemas
// normalised to JSON Schema (type dict→object ×932, ...)".
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", r.Kind)
	if r.Name != "" {
		fmt.Fprintf(&b, " %s", r.Name)
	}
	if r.Origin != "" && r.Kind != "mcp" {
		fmt.Fprintf(&b, " (%s)", r.Origin)
	}
	fmt.Fprintf(&b, ": %d tools in %s", r.Tools, r.Elapsed.Round(time.Millisecond))
	if r.Normalised > 0 {
		fmt.Fprintf(&b, "; %d schemas normalised to JSON Schema (%s)", r.Normalised, r.Changes)
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(&b, "; %d skipped", len(r.Skipped))
	}
	return b.String()
}
