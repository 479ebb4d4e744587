package importer

import (
	"context"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeMCPEnv, set in a child's environment, makes the test binary a stdio MCP server with
// one tool (ping) instead of running the tests.
const fakeMCPEnv = "TOOLRET_IMPORTER_FAKE_MCP"

type pingIn struct {
	Text string `json:"text,omitempty" jsonschema:"what to answer"`
}

// rawMCPEnv, set in a child's environment, makes the test binary a stdio MCP server that
// lists the tools of rawToolsJSON as written (serveRawStdio).
const rawMCPEnv = "TOOLRET_IMPORTER_RAW_MCP"

func TestMain(m *testing.M) {
	if os.Getenv(rawMCPEnv) != "" {
		if err := serveRawStdio(os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		return
	}
	if os.Getenv(fakeMCPEnv) != "" {
		s := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "ping", Description: "Answer pong."},
			func(context.Context, *mcp.CallToolRequest, pingIn) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
			})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}
