package runs

import (
	"github.com/toolret/toolret/models/encoder"
)

// Archs maps -arch to the encoder model_type it trains from scratch (encoder.Archs).
var Archs = encoder.Archs

// DefaultArch is the architecture of an encoder trained from scratch when none is given.
const DefaultArch = encoder.DefaultArch

// CheckArch validates -arch (encoder.CheckArch).
func CheckArch(arch string) error { return encoder.CheckArch(arch) }

// NewEncoder returns a from-scratch encoder of architecture arch with sizes s; a pair model
// (pairs) gets token type embeddings (encoder.NewArch).
func NewEncoder(arch string, s encoder.Sizes, pairs bool) (encoder.Config, error) {
	return encoder.NewArch(arch, s, pairs)
}

// CheckArchOf reports an error when arch was given explicitly (given) but the encoder c,
// taken from elsewhere (from names where: -init's checkpoint, the -first-stage run), is
// another architecture (encoder.CheckArchOf).
func CheckArchOf(arch string, given bool, c encoder.Config, from string) error {
	if !given {
		return nil
	}
	return encoder.CheckArchOf(arch, c, from)
}
