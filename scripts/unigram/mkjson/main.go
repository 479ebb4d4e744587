// Command mkjson writes the tokenizer.json toolret's Save makes for the Unigram fixture's
// spm.model (tokenize/testdata/unigram) into tokenize/testdata/unigram/hf, for the HF parity
// fixture (scripts/unigram/hf_fixture.mjs). Run from the repository root:
//
//	go run ./scripts/unigram/mkjson
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/tokenize"
)

func main() {
	in := flag.String("in", "tokenize/testdata/unigram", "directory with spm.model")
	out := flag.String("out", "tokenize/testdata/unigram/hf", "output directory")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "mkjson:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	t, err := tokenize.FromSPM(filepath.Join(in, "spm.model"))
	if err != nil {
		return err
	}
	if err := t.Save(out); err != nil {
		return err
	}
	// Compact tokenizer.json (a smaller fixture; Save indents it as HF does).
	tj := filepath.Join(out, "tokenizer.json")
	b, err := os.ReadFile(tj)
	if err != nil {
		return err
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return err
	}
	if err := os.WriteFile(tj, c.Bytes(), 0o644); err != nil {
		return err
	}
	// Keep only the HF files: the fixture checks the tokenizer.json path.
	for _, f := range []string{"spm.model", "added_tokens.json"} {
		if err := os.Remove(filepath.Join(out, f)); err != nil {
			return err
		}
	}
	return nil
}
