package encoder

import "fmt"

// Archs maps an architecture trained from scratch (the commands' -arch) to its model_type.
var Archs = map[string]string{"bert": "bert", "deberta": "deberta-v2", "wordbag": "wordbag"}

// DefaultArch is the architecture of an encoder trained from scratch when none is given.
const DefaultArch = "bert"

// CheckArch validates an architecture name (-arch).
func CheckArch(arch string) error {
	if _, ok := Archs[arch]; !ok {
		return fmt.Errorf("-arch %q: want bert, deberta or wordbag", arch)
	}
	return nil
}

// NewArch returns a from-scratch encoder of architecture arch with sizes s. A pair model
// (pairs) needs token type embeddings: a DeBERTa one gets type_vocab_size 2 (v3 has none).
func NewArch(arch string, s Sizes, pairs bool) (Config, error) {
	if err := CheckArch(arch); err != nil {
		return nil, err
	}
	c, err := New(Archs[arch], s)
	if err != nil {
		return nil, err
	}
	if pairs && arch == "wordbag" {
		return nil, fmt.Errorf("-arch wordbag: a bag of words cannot encode text pairs; use bert or deberta")
	}
	if pairs && c.TypeVocab() < 2 {
		return Override(c, map[string]any{"type_vocab_size": 2})
	}
	return c, nil
}

// CheckArchOf reports an error when arch was given ("" : not) and the encoder c, taken from
// elsewhere (from names where: -init's checkpoint, the -first-stage run), is another
// architecture.
func CheckArchOf(arch string, c Config, from string) error {
	if arch != "" && Archs[arch] != c.ModelType() {
		return fmt.Errorf("-arch %s: %s has a %s encoder", arch, from, c.ModelType())
	}
	return nil
}
