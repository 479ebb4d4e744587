package runs

import (
	"fmt"

	"github.com/toolret/toolret/models/encoder"
)

// Archs maps -arch to the encoder model_type it trains from scratch.
var Archs = map[string]string{"bert": "bert", "deberta": "deberta-v2", "wordbag": "wordbag"}

// DefaultArch is the architecture of an encoder trained from scratch when none is given.
const DefaultArch = "bert"

// CheckArch validates -arch.
func CheckArch(arch string) error {
	if _, ok := Archs[arch]; !ok {
		return fmt.Errorf("-arch %q: want bert, deberta or wordbag", arch)
	}
	return nil
}

// NewEncoder returns a from-scratch encoder of architecture arch with sizes s. A pair model
// (pairs) needs token type embeddings: a DeBERTa one gets type_vocab_size 2 (v3 has none).
func NewEncoder(arch string, s encoder.Sizes, pairs bool) (encoder.Config, error) {
	if err := CheckArch(arch); err != nil {
		return nil, err
	}
	c, err := encoder.New(Archs[arch], s)
	if err != nil {
		return nil, err
	}
	if pairs && arch == "wordbag" {
		return nil, fmt.Errorf("-arch wordbag: a bag of words cannot encode text pairs; use bert or deberta")
	}
	if pairs && c.TypeVocab() < 2 {
		return encoder.Override(c, map[string]any{"type_vocab_size": 2})
	}
	return c, nil
}

// CheckArchOf reports an error when arch was given explicitly (given) but the encoder c,
// taken from elsewhere (from names where: -init's checkpoint, the -retriever run), is
// another architecture.
func CheckArchOf(arch string, given bool, c encoder.Config, from string) error {
	if given && Archs[arch] != c.ModelType() {
		return fmt.Errorf("-arch %s: %s has a %s encoder", arch, from, c.ModelType())
	}
	return nil
}
