package cli

import (
	"flag"
	"fmt"

	"github.com/toolret/toolret/rerank"
)

// ClauseFlags are -clauses and its -clauses-* flags, shared by eval (which ranks with them) and
// export (which records them in a model's recipe): each query ranked whole and clause by
// clause and the rankings merged (rerank.Clauses).
type ClauseFlags struct {
	On       bool
	merge    string
	norm     string
	whole    float64
	minWords int
	depth    int
	given    map[string]bool // the -clauses-* flags given
}

// clauseFlagNames are the -clauses-* flags, in the order errors name them.
var clauseFlagNames = []string{"clauses-merge", "clauses-norm", "clauses-whole", "clauses-min-words", "clauses-depth"}

// Register declares -clauses (with help, the command's own words for what it does) and its
// -clauses-* flags, whose defaults are rerank's.
func (c *ClauseFlags) Register(fs *flag.FlagSet, help string) {
	fs.BoolVar(&c.On, "clauses", false, help)
	fs.StringVar(&c.merge, "clauses-merge", string(rerank.DefaultClauseMerge), "-clauses: max (each tool's best normalised score over the whole query and the clauses), mix (w·whole + (1-w)·best clause) or rrf (w/(60+rank in whole) + (1-w)·best 1/(60+rank in a clause))")
	fs.StringVar(&c.norm, "clauses-norm", string(rerank.DefaultClauseNorm), "-clauses max and mix: each ranking's scores normalised per query: zscore, minmax, or off (the raw scores)")
	fs.Float64Var(&c.whole, "clauses-whole", rerank.DefaultClauseWhole, "-clauses mix and rrf: the whole query's weight w in (0, 1]")
	fs.IntVar(&c.minWords, "clauses-min-words", rerank.DefaultClauseMinWords, "-clauses: a clause of fewer words is merged into its neighbour")
	fs.IntVar(&c.depth, "clauses-depth", rerank.DefaultClauseDepth, "-clauses: how many tools of each ranking are merged")
}

// Check records which -clauses-* flags were given (given: Set's map of the parsed flag set),
// refuses them without -clauses and checks their values.
func (c *ClauseFlags) Check(given map[string]bool) error {
	c.given = map[string]bool{}
	first := ""
	for _, name := range clauseFlagNames {
		if given[name] {
			c.given[name] = true
			if first == "" {
				first = name
			}
		}
	}
	if !c.On {
		if first != "" {
			return fmt.Errorf("-%s apply to -clauses", first)
		}
		return nil
	}
	_, err := c.Options()
	return err
}

// Options returns the rerank.ClauseOptions of the flags, nil without -clauses.
func (c *ClauseFlags) Options() (*rerank.ClauseOptions, error) {
	if !c.On {
		return nil, nil
	}
	if c.minWords < 1 {
		return nil, fmt.Errorf("-clauses-min-words %d: want >= 1", c.minWords)
	}
	if c.depth < 1 {
		return nil, fmt.Errorf("-clauses-depth %d: want >= 1", c.depth)
	}
	if !(c.whole > 0 && c.whole <= 1) {
		return nil, fmt.Errorf("-clauses-whole %v: want (0, 1]", c.whole)
	}
	o := &rerank.ClauseOptions{MinWords: c.minWords, Merge: rerank.Merge(c.merge), Norm: rerank.Norm(c.norm), Whole: c.whole, Depth: c.depth}
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("-%w", err)
	}
	return o, nil
}

// Given returns the options of the -clauses-* flags given, the others zero (rerank's
// defaults), nil without -clauses: what a recipe records, so that a default stays a default.
func (c *ClauseFlags) Given() (*rerank.ClauseOptions, error) {
	o, err := c.Options()
	if o == nil || err != nil {
		return o, err
	}
	var g rerank.ClauseOptions
	if c.given["clauses-merge"] {
		g.Merge = o.Merge
	}
	if c.given["clauses-norm"] {
		g.Norm = o.Norm
	}
	if c.given["clauses-whole"] {
		g.Whole = o.Whole
	}
	if c.given["clauses-min-words"] {
		g.MinWords = o.MinWords
	}
	if c.given["clauses-depth"] {
		g.Depth = o.Depth
	}
	return &g, nil
}
