package traincmd

import (
	"flag"

	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/internal/runs"
	"github.com/toolret/toolret/models/encoder"
)

// checkArch validates -arch (runs.CheckArch).
func checkArch(arch string) error { return runs.CheckArch(arch) }

// newEncoder returns a from-scratch encoder (runs.NewEncoder).
func newEncoder(arch string, s encoder.Sizes, pairs bool) (encoder.Config, error) {
	return runs.NewEncoder(arch, s, pairs)
}

// checkArchOf reports an error when -arch was given explicitly but the encoder c, taken from
// elsewhere (from names where), is another architecture (runs.CheckArchOf).
func checkArchOf(fs *flag.FlagSet, arch string, c encoder.Config, from string) error {
	return runs.CheckArchOf(arch, cli.Set(fs)["arch"], c, from)
}
