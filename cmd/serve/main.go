// Command serve is `toolret serve` on its own (go run ./cmd/serve ...): it parses the same flags
// and calls the same library package, github.com/toolret/toolret/commands/serve.
package main

import (
	"os"

	servecmd "github.com/toolret/toolret/commands/serve"
)

func main() { os.Exit(servecmd.Main(os.Args[1:])) }
