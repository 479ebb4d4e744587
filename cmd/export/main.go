// Command export is `toolret export` on its own (go run ./cmd/export ...): it parses the same flags
// and calls the same library package, github.com/toolret/toolret/commands/export.
package main

import (
	"os"

	exportcmd "github.com/toolret/toolret/commands/export"
)

func main() { os.Exit(exportcmd.Main(os.Args[1:])) }
