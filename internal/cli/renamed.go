package cli

import (
	"flag"
	"fmt"
	"strings"
)

// Renamed maps a flag's old spelling to its current name (docs/layout.md, "Names"). A command
// line that gives the old spelling to a command with the new flag and none of the old name
// still parses (Parse rewrites it) and gets a one-line deprecation note on stderr; a command
// that still defines the old name (export -refiner, the ToolRefiner run) is left alone.
var Renamed = map[string]string{
	"retriever": "first-stage", // the stage-1 bi-encoder run a later stage builds on
	"refiner":   "rewriter",    // train feedback / eval: what rewrites the query (llm, prf)
	"refiner-k": "rewriter-k",  // eval: tools shown to the rewriter each round
}

// renameArgs returns args with every flag spelled by an old name of Renamed (and defined in fs
// only by its new one) respelled, noting each on stderr. Only the flags before the first
// non-flag argument or "--" are looked at, as fs.Parse does.
func renameArgs(fs *flag.FlagSet, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		dashes := "-"
		if strings.HasPrefix(a, "--") {
			dashes = "--"
		}
		name, value, hasValue := strings.Cut(a[len(dashes):], "=")
		if nw, ok := Renamed[name]; ok && fs.Lookup(name) == nil && fs.Lookup(nw) != nil {
			if out == nil {
				out = append([]string(nil), args...)
			}
			fmt.Fprintf(stderr(), "toolret %s: -%s is deprecated, use -%s\n", fs.Name(), name, nw)
			name, out[i] = nw, dashes+nw
			if hasValue {
				out[i] += "=" + value
			}
		}
		if f := fs.Lookup(name); f == nil || hasValue || isBool(f) {
			continue
		}
		i++ // the flag's value
	}
	if out == nil {
		return args
	}
	return out
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
