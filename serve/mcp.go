package serve

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/toolindex/store"
)

// FindToolsInput is the input of the MCP tool find_tools.
type FindToolsInput struct {
	Query string `json:"query" jsonschema:"what the agent needs to do, in natural language"`
	K     int    `json:"k,omitempty" jsonschema:"how many tools to return (default 5)"`
}

// FoundTool is a tool find_tools returns.
type FoundTool struct {
	Name        string     `json:"name"`
	ID          string     `json:"id"`
	Description string     `json:"description"`
	Score       float32    `json:"score"`
	Hierarchy   *Hierarchy `json:"hierarchy,omitempty"`
}

// FindToolsOutput is the output of find_tools.
type FindToolsOutput struct {
	Tools   []FoundTool `json:"tools"`
	Version uint64      `json:"library_version"`
}

// toolName is how find_tools names a tool: its title, else tool/API of its hierarchy, else
// its id.
func toolName(rec export.ToolRecord) string {
	if rec.Title != "" {
		return rec.Title
	}
	if n := strings.Trim(rec.ToolName+"/"+rec.APIName, "/"); n != "" {
		return n
	}
	return rec.ID
}

// NewMCP returns an MCP server with the tool find_tools, answering from st's library,
// and the tools of cfg.Extension.
func NewMCP(st *store.Store, cfg Config) *mcp.Server {
	cfg.defaults()
	instr := "Call find_tools with a description of the task to get the few tools of the library that serve it, best first."
	if x, ok := cfg.Extension.(interface{ Instructions() string }); ok {
		instr = x.Instructions()
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "toolret", Title: "toolret tool retrieval", Version: export.Version()}, &mcp.ServerOptions{Instructions: instr})
	desc := fmt.Sprintf("Find the tools of a library of thousands that serve a task: give the task in natural language (query) and how many tools you want (k, default %d, at most %d); get their names, descriptions and relevance scores, best first.", cfg.DefaultK, cfg.MaxK)
	mcp.AddTool(s, &mcp.Tool{Name: "find_tools", Description: desc, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in FindToolsInput) (*mcp.CallToolResult, FindToolsOutput, error) {
			var out FindToolsOutput
			if err := Allowed(req.Extra, ScopeSearch); err != nil {
				return nil, out, err
			}
			if strings.TrimSpace(in.Query) == "" {
				return nil, out, fmt.Errorf(`"query" is empty: describe the task to find tools for`)
			}
			k := in.K
			if k == 0 {
				k = cfg.DefaultK
			}
			if k < 0 || k > cfg.MaxK {
				return nil, out, fmt.Errorf(`"k" = %d: must be between 1 and %d`, in.K, cfg.MaxK)
			}
			ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			defer cancel()
			lib := st.R.Library()
			res, err := st.R.RetrieveFrom(ctx, lib, []string{in.Query}, k)
			if err != nil {
				return nil, out, err
			}
			out.Version, out.Tools = lib.Version, make([]FoundTool, len(res[0]))
			for i, x := range res[0] {
				rec := lib.Tool(x.Index)
				out.Tools[i] = FoundTool{Name: toolName(rec), ID: rec.ID, Description: rec.Text, Score: x.Score, Hierarchy: hierarchyOf(rec)}
			}
			return nil, out, nil
		})
	if cfg.Extension != nil {
		cfg.Extension.MCPTools(s)
	}
	return s
}
