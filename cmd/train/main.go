// Command train is `toolret train` on its own (go run ./cmd/train ...): it parses the same flags
// and calls the same library package, github.com/toolret/toolret/commands/train.
package main

import (
	"os"

	traincmd "github.com/toolret/toolret/commands/train"
)

func main() { os.Exit(traincmd.Main(os.Args[1:])) }
