// Command import is `toolret import` on its own (go run ./cmd/import ...): it parses the same flags
// and calls the same library package, github.com/toolret/toolret/commands/import.
package main

import (
	"os"

	importcmd "github.com/toolret/toolret/commands/import"
)

func main() { os.Exit(importcmd.Main(os.Args[1:])) }
