package cli

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/toolret/toolret/rerank"
)

func TestClauseFlags(t *testing.T) {
	for _, c := range []struct {
		args    []string
		options *rerank.ClauseOptions // nil: no -clauses
		given   *rerank.ClauseOptions
		err     string
	}{
		{args: nil},
		{args: []string{"-clauses"},
			options: &rerank.ClauseOptions{MinWords: 3, Merge: "max", Norm: "zscore", Whole: 0.5, Depth: 100},
			given:   &rerank.ClauseOptions{}},
		{args: []string{"-clauses", "-clauses-merge", "rrf", "-clauses-whole", "0.7", "-clauses-depth", "20"},
			options: &rerank.ClauseOptions{MinWords: 3, Merge: "rrf", Norm: "zscore", Whole: 0.7, Depth: 20},
			given:   &rerank.ClauseOptions{Merge: "rrf", Whole: 0.7, Depth: 20}},
		{args: []string{"-clauses-norm", "minmax"}, err: "-clauses-norm apply to -clauses"},
		{args: []string{"-clauses", "-clauses-merge", "sum"}, err: `merge "sum"`},
		{args: []string{"-clauses", "-clauses-min-words", "0"}, err: "-clauses-min-words 0"},
		{args: []string{"-clauses", "-clauses-whole", "0"}, err: "-clauses-whole 0"},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f ClauseFlags
		f.Register(fs, "help")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := f.Check(Set(fs))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		o, _ := f.Options()
		g, _ := f.Given()
		if (o == nil) != (c.options == nil) || o != nil && (*o != *c.options || *g != *c.given) {
			t.Errorf("%v: options %+v given %+v, want %+v and %+v", c.args, o, g, c.options, c.given)
		}
	}
}
