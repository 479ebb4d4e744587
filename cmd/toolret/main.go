// Command toolret trains, evaluates, exports and serves tool retrievers: one binary whose
// commands parse flags and call the library (package github.com/toolret/toolret and the
// packages it names).
//
//	toolret train [KIND|mine|feedback|migrate|plot|help] [flags]   train a model of a registered kind
//	toolret eval [flags]      evaluate a method, run or model on a split
//	toolret export [flags]    HF/sentence-transformers, ONNX or a served index
//	toolret serve [flags]     serve an index over HTTP and MCP
//	toolret encode [flags]    embed texts
//	toolret convert [flags]   BEIR <-> Parquet datasets
//	toolret import [flags]    tool libraries from MCP servers, OpenAPI specs, function lists
//	toolret hub download|path|import   the Hugging Face hub cache
//	toolret bench encode|train|matmul|colt|retrieve|rerank|serve [flags]
//	toolret version
//
// `toolret COMMAND -h` prints a short synopsis; docs/ has the rest.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	benchcmd "github.com/toolret/toolret/commands/bench"
	convertcmd "github.com/toolret/toolret/commands/convert"
	encodecmd "github.com/toolret/toolret/commands/encode"
	evalcmd "github.com/toolret/toolret/commands/eval"
	exportcmd "github.com/toolret/toolret/commands/export"
	hubcmd "github.com/toolret/toolret/commands/hub"
	importcmd "github.com/toolret/toolret/commands/import"
	servecmd "github.com/toolret/toolret/commands/serve"
	traincmd "github.com/toolret/toolret/commands/train"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/internal/cli"
)

type command struct {
	run  func(args []string) int
	help string
}

var commands = map[string]command{
	"train":   {traincmd.Main, traincmd.Summary()},
	"eval":    {evalcmd.Main, "evaluate a method, run or pre-trained model on a dataset split"},
	"export":  {exportcmd.Main, "export a run or model: hf (sentence-transformers), onnx, or a served index"},
	"serve":   {servecmd.Main, "serve an exported index over HTTP and MCP"},
	"encode":  {encodecmd.Main, "embed texts with an encoder model"},
	"convert": {convertcmd.Main, "convert a dataset between the BEIR and Parquet layouts"},
	"import":  {importcmd.Main, "import tool definitions into a tool library from MCP servers, OpenAPI specs and function lists"},
	"hub":     {hubcmd.Main, "download, locate or import models in the Hugging Face hub cache"},
	"bench":   {benchcmd.Main, "measure toolret against PyTorch on the same shapes"},
	"version": {version, "print the version"},
}

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "toolret: unknown command %q%s\n", args[0], suggest(args[0]))
		fmt.Fprintln(stderr, "run 'toolret -h' for the commands")
		return 2
	}
	return c.run(args[1:])
}

func version([]string) int {
	fmt.Println(export.Version())
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: toolret COMMAND [flags]")
	fmt.Fprintln(w)
	for _, n := range names() {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].help)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "toolret COMMAND -h: the command's synopsis; docs/: everything else")
}

func names() []string {
	var out []string
	for n := range commands {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// suggest returns ` (did you mean "X"?)` for the commands closest to name, or "".
func suggest(name string) string {
	c := cli.Closest(name, names())
	if len(c) == 0 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", strings.Join(c, `" or "`))
}
