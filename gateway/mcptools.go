package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret/serve"
)

// Instructions are the gateway's MCP server instructions.
func (g *Gateway) Instructions() string {
	return "This server is a gateway to a library of tools. Call search_tools with the task in natural language to get the few tools " +
		"that serve it, best first, each with its input schema; then call_tool with a tool's name and arguments that follow its schema. " +
		"report_result says whether a tool's result served the task."
}

var (
	searchSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"query":{"type":"string","description":"the task, in natural language"},` +
		`"k":{"type":"integer","minimum":1,"description":"how many tools to return (default %d, at most %d)"},` +
		`"filters":{"type":"object","description":"restrict the search","properties":{` +
		`"server":{"type":"string","description":"only tools of this MCP server"},` +
		`"namespace":{"type":"string","description":"only tools of this namespace"},` +
		`"tags":{"type":"array","items":{"type":"string"},"description":"only tools with every one of these tags"}},"additionalProperties":false}},` +
		`"required":["query"],"additionalProperties":false}`)
	callSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"name":{"type":"string","description":"the tool's name as search_tools gave it, or its client_name"},` +
		`"arguments":{"type":"object","description":"the tool's arguments, following its input_schema"},` +
		`"search_id":{"type":"string","description":"the search_id of the search that found the tool (optional)"}},` +
		`"required":["name"],"additionalProperties":false}`)
	reportSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"name":{"type":"string","description":"the tool reported on"},` +
		`"success":{"type":"boolean","description":"whether its result served the task"},` +
		`"search_id":{"type":"string","description":"the search_id of the search that found it (optional)"},` +
		`"query":{"type":"string","description":"the task, when there was no search (optional)"},` +
		`"note":{"type":"string","description":"what was wrong or right (optional)"}},` +
		`"required":["name","success"],"additionalProperties":false}`)
)

// SearchInput is the input of search_tools and the body of POST /v1/search.
type SearchInput struct {
	Query   string   `json:"query"`
	K       *int     `json:"k,omitempty"`
	Filters *Filters `json:"filters,omitempty"`
}

// CallInput is the input of call_tool and the body of POST /v1/call.
type CallInput struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	SearchID  string          `json:"search_id,omitempty"`
}

// ReportInput is the input of report_result and the body of POST /v1/feedback.
type ReportInput struct {
	Name     string `json:"name"`
	Success  *bool  `json:"success"`
	SearchID string `json:"search_id,omitempty"`
	Query    string `json:"query,omitempty"`
	Note     string `json:"note,omitempty"`
}

func decodeStrict(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	return serve.DecodeJSON(raw, v)
}

func keyOf(req *mcp.CallToolRequest) string {
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		return req.Extra.TokenInfo.UserID
	}
	return ""
}

// jsonResult is a tool result carrying v as structured content and as its JSON text, both
// the same JSON (a schema in it keeps its properties' order).
func jsonResult(v any) *mcp.CallToolResult {
	b, _ := json.Marshal(v)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

// MCPTools adds search_tools, call_tool and report_result to s (serve.Extension).
func (g *Gateway) MCPTools(s *mcp.Server) {
	defK, maxK := g.opts.K, g.opts.MaxK
	s.AddTool(&mcp.Tool{Name: "search_tools", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Description: "Search the gateway's tool library: give the task in natural language; get the tools that serve it, best first, " +
			"each with its name (for call_tool), description, input_schema, server or namespace and relevance score.",
		InputSchema: json.RawMessage(fmt.Sprintf(string(searchSchema), defK, maxK))},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := serve.Allowed(req.Extra, serve.ScopeSearch); err != nil {
				return toolError("%v", err), nil
			}
			var in SearchInput
			if err := decodeStrict(req.Params.Arguments, &in); err != nil {
				return toolError("search_tools arguments: %v", err), nil
			}
			k := defK
			if in.K != nil {
				k = *in.K
			}
			if k < 1 || k > maxK {
				return toolError(`"k" = %d: must be between 1 and %d`, k, maxK), nil
			}
			res, err := g.Search(ctx, in.Query, k, in.Filters, keyOf(req))
			if err != nil {
				return toolError("%v", err), nil
			}
			return jsonResult(res), nil
		})
	s.AddTool(&mcp.Tool{Name: "call_tool", Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true)},
		Description: "Call a tool of the gateway's library by the name search_tools gave, with arguments that follow its input_schema. " +
			"The arguments are checked against the schema first; the tool's own result comes back as it is.",
		InputSchema: callSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := serve.Allowed(req.Extra, serve.ScopeCall); err != nil {
				return toolError("%v", err), nil
			}
			var in CallInput
			if err := decodeStrict(req.Params.Arguments, &in); err != nil {
				return toolError("call_tool arguments: %v", err), nil
			}
			if in.Name == "" {
				return toolError(`"name" is empty: give the name of a tool search_tools found`), nil
			}
			res, err := g.Call(ctx, in.Name, in.Arguments, keyOf(req), in.SearchID)
			if err != nil {
				return toolError("%v", err), nil
			}
			return res, nil
		})
	s.AddTool(&mcp.Tool{Name: "report_result", Annotations: &mcp.ToolAnnotations{IdempotentHint: false},
		Description: "Report whether a tool's result served the task (success true or false, with a note): the gateway learns from it which tools to find.",
		InputSchema: reportSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := serve.Allowed(req.Extra, serve.ScopeCall); err != nil {
				return toolError("%v", err), nil
			}
			var in ReportInput
			if err := decodeStrict(req.Params.Arguments, &in); err != nil {
				return toolError("report_result arguments: %v", err), nil
			}
			if in.Success == nil {
				return toolError(`"success" is missing: true or false`), nil
			}
			if err := g.Feedback(in.Name, in.SearchID, in.Query, *in.Success, in.Note, keyOf(req)); err != nil {
				return toolError("%v", err), nil
			}
			return jsonResult(map[string]any{"recorded": true}), nil
		})
}

func ptr[T any](v T) *T { return &v }
