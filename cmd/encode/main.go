// Command encode is `toolret encode` on its own (go run ./cmd/encode ...): it parses the same flags
// and calls the same library package, github.com/toolret/toolret/commands/encode.
package main

import (
	"os"

	encodecmd "github.com/toolret/toolret/commands/encode"
)

func main() { os.Exit(encodecmd.Main(os.Args[1:])) }
