// Command eval is `toolret eval` on its own (go run ./cmd/eval ...): it parses the same flags
// and calls the same library package, github.com/toolret/toolret/commands/eval.
package main

import (
	"os"

	evalcmd "github.com/toolret/toolret/commands/eval"
)

func main() { os.Exit(evalcmd.Main(os.Args[1:])) }
