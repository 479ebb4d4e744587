package importer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolret/toolret/library"
)

// Sources names what Import reads.
type Sources struct {
	// MCP lists mcpServers configuration files; MCPServers, when not empty, the only servers
	// of them to import.
	MCP        []string
	MCPServers []string
	// OpenAPI and Functions list files, each "PATH" or "NAMESPACE=PATH" (SplitSource).
	OpenAPI   []string
	Functions []string
	// Timeout bounds each MCP server (0: DefaultMCPTimeout).
	Timeout time.Duration
	// Strict refuses an OpenAPI description that does not load whole, instead of skipping
	// the operations that do not load (OpenAPIOptions.Strict).
	Strict bool
}

// SplitSource splits "NAMESPACE=PATH" (NAMESPACE letters, digits, '_' and '-'); a plain
// PATH's namespace is def(PATH).
func SplitSource(s string, def func(path string) string) (namespace, path string) {
	if ns, p, ok := strings.Cut(s, "="); ok && ns != "" && library.ValidNamespace(ns) && p != "" {
		return ns, p
	}
	return def(s), s
}

// FileNamespace is the default namespace of an OpenAPI description: its file name without
// extensions, other characters than letters, digits, '_' and '-' as '_' ("api.github.com.json"
// → "api_github_com").
func FileNamespace(path string) string {
	base := filepath.Base(path)
	for _, ext := range []string{".json", ".yaml", ".yml"} {
		base = strings.TrimSuffix(base, ext)
	}
	return Namespace(base)
}

// NoNamespace is the default namespace of a function list: none, so its tools are named as
// the list names them.
func NoNamespace(string) string { return "" }

// Import imports every source of s: it returns the imported tools as a library (MCP servers
// first, by configuration and server name, then OpenAPI descriptions, then function lists,
// each in the order given), a report per source imported, and an error naming each source
// that failed (the others are imported). Two sources of one kind may not share a namespace.
func Import(ctx context.Context, s Sources) (*library.Library, []Report, error) {
	lib := &library.Library{}
	var reports []Report
	var errs []error
	groups := map[string]string{}
	add := func(tools []library.Tool, r Report, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		if prev, dup := groups[r.Group]; dup {
			errs = append(errs, fmt.Errorf("%s and %s both import %s tools into namespace %q: give one NAMESPACE=PATH", prev, r.Origin, r.Kind, r.Name))
			return
		}
		groups[r.Group] = r.Origin
		lib.Tools = append(lib.Tools, tools...)
		reports = append(reports, r)
	}
	for _, path := range s.MCP {
		cfg, err := ReadMCPConfig(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		names := s.MCPServers
		if len(names) > 0 {
			names = nil
			for _, n := range s.MCPServers {
				if _, ok := cfg.Servers[n]; ok {
					names = append(names, n)
				}
			}
			if len(names) == 0 {
				errs = append(errs, fmt.Errorf("-mcp %s: none of the servers %s", path, strings.Join(s.MCPServers, ", ")))
				continue
			}
		}
		tools, rs, err := MCP(ctx, cfg, names, s.Timeout)
		for _, r := range rs {
			add(filterGroup(tools, r.Group), r, nil)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("-mcp %s: %w", path, err))
		}
	}
	for _, src := range s.OpenAPI {
		ns, path := SplitSource(src, FileNamespace)
		add(OpenAPIWith(ctx, path, ns, OpenAPIOptions{Strict: s.Strict}))
	}
	for _, src := range s.Functions {
		ns, path := SplitSource(src, NoNamespace)
		add(Functions(path, ns))
	}
	if len(reports) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("nothing to import: give -mcp, -openapi or -functions"))
	}
	return lib, reports, errors.Join(errs...)
}

func filterGroup(tools []library.Tool, group string) []library.Tool {
	var out []library.Tool
	for _, t := range tools {
		if t.Group() == group {
			out = append(out, t)
		}
	}
	return out
}

// Covered returns the groups the reports cover (library.Merge's covered).
func Covered(reports []Report) []string {
	out := make([]string, len(reports))
	for i, r := range reports {
		out[i] = r.Group
	}
	return out
}
