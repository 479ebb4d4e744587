package traincmd

import (
	"flag"

	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/internal/runs"
	"github.com/toolret/toolret/models/encoder"
)

// archFlag registers -arch: the architecture of an encoder trained from scratch.
func archFlag(fs *flag.FlagSet) *string {
	return fs.String("arch", runs.DefaultArch, "from scratch: encoder architecture, bert, deberta (DeBERTa-v3: disentangled attention over log-bucketed relative positions) or wordbag (idf-weighted bag of word vectors, -hidden wide, no layers; bi-encoders only)")
}

// scratch is the flags that size an encoder trained from scratch (train biencoder, train
// pretrain): its vocabulary (-vocab or -vocab-size built from corpus), -layers, -hidden,
// -heads, -intermediate and -arch.
type scratch struct {
	vocab, arch                             *string
	vocabSize, layers, hidden, heads, inter *int
}

// scratchFlags registers the from-scratch size flags; corpus names what -vocab-size builds from.
func scratchFlags(fs *flag.FlagSet, corpus string) scratch {
	return scratch{
		vocab:     fs.String("vocab", "", "from scratch: a vocab.txt (default: build a WordPiece vocab from "+corpus+")"),
		vocabSize: fs.Int("vocab-size", 8000, "from scratch: size of the built vocabulary"),
		layers:    fs.Int("layers", 2, "from scratch: layers"),
		hidden:    fs.Int("hidden", 128, "from scratch: hidden size"),
		heads:     fs.Int("heads", 4, "from scratch: attention heads"),
		inter:     fs.Int("intermediate", 0, "from scratch: intermediate size (default 4*hidden)"),
		arch:      archFlag(fs),
	}
}

// check validates the sizes of a from-scratch encoder.
func (s scratch) check() error {
	return cli.First(cli.Positive("layers", *s.layers), cli.Positive("hidden", *s.hidden), cli.Positive("heads", *s.heads),
		cli.NonNegative("intermediate", *s.inter), cli.Positive("vocab-size", *s.vocabSize))
}

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
