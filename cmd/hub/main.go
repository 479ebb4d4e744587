// Command hub is `toolret hub` on its own (go run ./cmd/hub ...): it parses the same flags
// and calls the same library package, github.com/toolret/toolret/commands/hub.
package main

import (
	"os"

	hubcmd "github.com/toolret/toolret/commands/hub"
)

func main() { os.Exit(hubcmd.Main(os.Args[1:])) }
