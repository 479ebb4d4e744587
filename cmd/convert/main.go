// Command convert is `toolret convert` on its own (go run ./cmd/convert ...): it parses the same flags
// and calls the same library package, github.com/toolret/toolret/commands/convert.
package main

import (
	"os"

	convertcmd "github.com/toolret/toolret/commands/convert"
)

func main() { os.Exit(convertcmd.Main(os.Args[1:])) }
