// Command mkjson writes toolret's tokenizer files (tokenizer.json, vocab.txt, ...) for a BERT
// vocab.txt, for the tokenizer parity fixture (scripts/tokparity/make_fixture.mjs).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/toolret/toolret/tokenize"
)

func main() {
	vocab := flag.String("vocab", "../shared/vocab/bert-base-uncased-vocab.txt", "vocab.txt")
	out := flag.String("out", "", "output directory")
	flag.Parse()
	t, err := tokenize.FromVocab(*vocab, true)
	if err == nil {
		err = t.Save(*out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkjson:", err)
		os.Exit(1)
	}
}
