// Command bench is `toolret bench` on its own (go run ./cmd/bench ...): it parses the same flags
// and calls the same library package, github.com/toolret/toolret/commands/bench.
package main

import (
	"os"

	benchcmd "github.com/toolret/toolret/commands/bench"
)

func main() { os.Exit(benchcmd.Main(os.Args[1:])) }
