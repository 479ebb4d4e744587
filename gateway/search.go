package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/toolret/toolret/library"
)

// Filters restrict a search to the tools of an MCP server, a namespace, and that carry
// every tag listed; empty fields do not restrict.
type Filters struct {
	Server    string   `json:"server,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
	Tags      []string `json:"tags,omitempty"`
}

func (f *Filters) empty() bool {
	return f == nil || f.Server == "" && f.Namespace == "" && len(f.Tags) == 0
}

func (f *Filters) match(t *library.Tool) bool {
	if f.empty() {
		return true
	}
	if f.Server != "" && t.Source.Server != f.Server {
		return false
	}
	if f.Namespace != "" && t.Namespace != f.Namespace {
		return false
	}
	for _, tag := range f.Tags {
		if !slices.Contains(t.Tags, tag) {
			return false
		}
	}
	return true
}

// Definition is a tool as search_tools and the REST API give it: everything an agent needs
// to call it. Name is what call_tool takes (the library's tool ID, namespace.name);
// ClientName is the name to give the tool in an OpenAI or Anthropic request
// (library.ClientNames: ^[a-zA-Z0-9_-]{1,64}$, unique in the library), which call_tool and
// POST /v1/call take as well.
type Definition struct {
	Name         string          `json:"name"`
	ClientName   string          `json:"client_name"`
	ToolName     string          `json:"tool_name"`
	Namespace    string          `json:"namespace,omitempty"`
	Server       string          `json:"server,omitempty"`
	Source       string          `json:"source"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Tags         []string        `json:"tags,omitempty"`
	// Callable is whether the gateway can call it (an upstream of its configuration serves it).
	Callable bool `json:"callable"`
	// Score is the retrieval score (searches only).
	Score *float32 `json:"score,omitempty"`
}

// Define returns t's definition.
func (g *Gateway) Define(t *library.Tool) Definition { return g.define(g.lib.Load(), t) }

// define returns t's definition with its client name in st.
func (g *Gateway) define(st *state, t *library.Tool) Definition {
	return Definition{Name: t.ID(), ClientName: st.clientName(t.ID()), ToolName: t.Name, Namespace: t.Namespace, Server: t.Source.Server, Source: t.Source.Kind,
		Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
		Annotations: t.Annotations, Tags: t.Tags, Callable: g.Callable(t)}
}

// SearchResult is the answer of a search: the tools, best first, from library Version of
// LibrarySize tools.
type SearchResult struct {
	// SearchID identifies the search in the usage log: give it to call_tool and
	// report_result.
	SearchID    string       `json:"search_id"`
	Version     uint64       `json:"library_version"`
	LibrarySize int          `json:"library_size"`
	Tools       []Definition `json:"tools"`
}

// ErrBadSearch is the error of a search request that cannot be answered as asked.
var ErrBadSearch = errors.New("bad search")

// Search returns the k tools that best serve query among those f lets through, with their
// full definitions. Tools the index has without a definition (added through POST /v1/tools)
// are given by their text when no filter is set.
func (g *Gateway) Search(ctx context.Context, query string, k int, f *Filters, key string) (*SearchResult, error) {
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf(`%w: "query" is empty: describe the task to find tools for`, ErrBadSearch)
	}
	st := g.lib.Load()
	lib := g.store.R.Library()
	n := lib.Len()
	depth := min(k, n)
	if !f.empty() {
		depth = min(n, max(4*k, 100))
	}
	out := &SearchResult{SearchID: newSearchID(), Version: lib.Version, LibrarySize: n, Tools: []Definition{}}
	for {
		res, err := g.store.R.RetrieveFrom(ctx, lib, []string{query}, depth)
		if err != nil {
			return nil, err
		}
		out.Tools = out.Tools[:0]
		for _, x := range res[0] {
			var d Definition
			if i, ok := st.byID[x.ToolID]; ok {
				t := &st.lib.Tools[i]
				if !f.match(t) {
					continue
				}
				d = g.define(st, t)
			} else {
				if !f.empty() {
					continue
				}
				d = Definition{Name: x.ToolID, ClientName: library.ClientName(x.ToolID), ToolName: x.ToolID, Title: x.Title, Description: x.Text, InputSchema: json.RawMessage(`{"type":"object"}`)}
			}
			score := x.Score
			d.Score = &score
			out.Tools = append(out.Tools, d)
			if len(out.Tools) == k {
				break
			}
		}
		if len(out.Tools) == k || depth >= n {
			break
		}
		depth = n
	}
	g.logSearch(query, k, f, out, key)
	return out, nil
}

// List returns the definitions of the library's tools that f lets through, in library
// order, from offset on, at most limit; and how many f lets through in all.
func (g *Gateway) List(f *Filters, offset, limit int) ([]Definition, int) {
	st := g.lib.Load()
	out := []Definition{}
	total := 0
	for i := range st.lib.Tools {
		t := &st.lib.Tools[i]
		if !f.match(t) {
			continue
		}
		if total >= offset && len(out) < limit {
			out = append(out, g.define(st, t))
		}
		total++
	}
	return out, total
}
