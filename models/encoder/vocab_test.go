package encoder_test

import (
	"strings"
	"testing"

	"github.com/toolret/toolret/models/encoder"
)

// TestCheckVocab: a tokenizer must fit the embedding table, padding rows aside.
func TestCheckVocab(t *testing.T) {
	cfg, err := encoder.New("bert", encoder.Sizes{Vocab: 30522, Hidden: 32, Layers: 1, Heads: 4, Intermediate: 64, MaxPositions: 64})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tokens int
		want   string
	}{
		{30522, ""},
		{30522 - encoder.MaxVocabPadding, ""}, // padded table (deberta-v3: 128,100 rows, 128,001 tokens)
		{30000, "not this model's"},
		{30523, "vocab_size is 30522"},
	} {
		err := encoder.CheckVocab(c.tokens, cfg)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%d tokens: %v, want %q", c.tokens, err, c.want)
		}
	}
}
