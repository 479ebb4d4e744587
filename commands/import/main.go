// Package importcmd is the `toolret import` command; it imports tool definitions into a
// tool library file (package library) from MCP servers, OpenAPI descriptions and function-tool
// lists, and reports what changed in the file.
//
//	import -out LIB.jsonl [-mcp CONFIG.json] [-openapi [NS=]SPEC] [-functions [NS=]FILE] [-template T]
//
// -mcp reads the mcpServers configuration MCP clients use, starts or reaches each server and
// lists its tools (namespace: the server's name). -openapi makes one tool per operation of an
// OpenAPI 3.0/3.1 description, JSON or YAML (namespace: the file's name, or NS). -functions
// reads an OpenAI or Anthropic function-tool list (no namespace, or NS), its schemas
// normalised to JSON Schema. Each may be repeated or given a comma-separated list. An existing
// -out is updated: the tools of the sources imported are replaced (added, changed, removed),
// others kept (-replace: dropped). See docs/tool-libraries.md.
package importcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/library/importer"
)

// list is a repeatable flag whose values may also be comma-separated lists.
type list []string

func (l *list) String() string { return strings.Join(*l, ",") }

func (l *list) Set(s string) error {
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*l = append(*l, x)
		}
	}
	return nil
}

type options struct {
	src      importer.Sources
	out      string
	template string
	replace  bool
	dryRun   bool
	verbose  bool
}

// Main runs `toolret import` with args (the words after it) and returns the exit code.
func Main(args []string) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	var o options
	var mcpFiles, servers, specs, funcs list
	fs.Var(&mcpFiles, "mcp", "mcpServers configuration `CONFIG.json` (as MCP clients keep it); every server's tools/list is imported, namespace the server's name (repeatable)")
	fs.Var(&servers, "mcp-server", "import only these `NAMES` of the -mcp configuration (comma-separated; default: every server not disabled)")
	fs.Var(&specs, "openapi", "OpenAPI 3.0/3.1 description `[NS=]SPEC` (JSON or YAML): one tool per operation, namespace NS or the file's name (repeatable, comma-separated)")
	fs.Var(&funcs, "functions", "OpenAI/Anthropic function-tool list `[NS=]FILE` (JSON): namespace NS or none (repeatable, comma-separated)")
	fs.StringVar(&o.out, "out", "", "the tool library `LIB.jsonl` to write; an existing one is updated and the changes reported")
	fs.StringVar(&o.template, "template", "", "retrieval text template (Go text/template over name, description, params, ...; docs/tool-libraries.md); default: the library's own, else "+fmt.Sprintf("%q", library.DefaultTemplate))
	fs.DurationVar(&o.src.Timeout, "timeout", importer.DefaultMCPTimeout, "time limit for each MCP server to start and list its tools")
	fs.BoolVar(&o.src.Strict, "strict", false, "refuse an -openapi description that does not load whole (default: skip each operation that does not load, with its spec path and the reason)")
	fs.BoolVar(&o.replace, "replace", false, "write only the tools imported now (default: keep an existing -out's tools of other sources)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "report what would change in -out without writing it")
	fs.BoolVar(&o.verbose, "v", false, "list every tool added, changed or removed (default: the first 10 of each)")
	if err := cli.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "import: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "import: unexpected arguments %q\n", fs.Args())
		return 2
	}
	o.src.MCP, o.src.MCPServers, o.src.OpenAPI, o.src.Functions = mcpFiles, servers, specs, funcs
	code, err := run(context.Background(), o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "import:", err)
	}
	return code
}

// run imports, merges into -out and writes it; a source that failed makes the exit code 1
// (the others are still written: the failed ones' tools in -out are kept).
func run(ctx context.Context, o options, w io.Writer) (int, error) {
	if o.out == "" {
		return 2, errors.New("-out (the library file to write) is required")
	}
	if !strings.HasSuffix(o.out, ".jsonl") {
		return 2, fmt.Errorf("-out %s: a library file's name ends in .jsonl (so -data takes it for one)", o.out)
	}
	if len(o.src.MCP)+len(o.src.OpenAPI)+len(o.src.Functions) == 0 {
		return 2, errors.New("nothing to import: give -mcp, -openapi or -functions")
	}
	if o.template != "" {
		if _, err := library.ParseTemplate(o.template); err != nil {
			return 2, fmt.Errorf("-template: %w", err)
		}
	}
	li, err := toolret.PrepareImport(ctx, o.src, o.out, toolret.ImportOptions{Template: o.template, Replace: o.replace})
	if err != nil {
		return 1, fmt.Errorf("-out: %w (not overwritten)", err)
	}
	ierr := li.Err
	for _, r := range li.Reports {
		printReport(w, r)
	}
	if li.Library == nil {
		return 1, ierr
	}
	lib, c := li.Library, li.Changes
	if err := lib.Check(); err != nil {
		// Before saying what would be written: nothing is.
		return 1, errors.Join(ierr, fmt.Errorf("-out %s not written: %w", o.out, err))
	}
	verb := "wrote"
	if o.dryRun {
		verb = "would write"
	}
	fmt.Fprintf(w, "import: %s %s: %d tools (%s)\n", verb, o.out, len(lib.Tools), c)
	n := 10
	if o.verbose {
		n = len(lib.Tools) + len(c.Removed)
	}
	for _, x := range []struct {
		what string
		ids  []string
	}{{"added", c.Added}, {"changed", c.Changed}, {"removed", c.Removed}} {
		if len(x.ids) > 0 {
			fmt.Fprintf(w, "import:   %s: %s\n", x.what, library.Summary(x.ids, n))
		}
	}
	if !o.dryRun {
		if err := li.Write(); err != nil {
			return 1, errors.Join(ierr, err)
		}
	}
	if ierr != nil {
		return 1, ierr
	}
	return 0, nil
}

func printReport(w io.Writer, r importer.Report) {
	fmt.Fprintf(w, "import: %s\n", r)
	for i, s := range r.Skipped {
		if i == 10 {
			fmt.Fprintf(w, "import:   … and %d more skipped\n", len(r.Skipped)-i)
			break
		}
		fmt.Fprintf(w, "import:   skipped %s\n", s)
	}
	for _, s := range r.Notes {
		fmt.Fprintf(w, "import:   note: %s\n", s)
	}
}
