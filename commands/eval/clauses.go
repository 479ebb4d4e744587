package evalcmd

import (
	"flag"
	"fmt"

	"github.com/toolret/toolret/rerank"
)

// clauseOptions are the flags of -clauses: each query ranked whole and clause by clause, the
// rankings merged (rerank.Clauses).
type clauseOptions struct {
	on         bool
	merge      string
	norm       string
	whole      float64
	minWords   int
	depth      int
	givenExtra []string // the -clauses-* flags given
}

func (c *clauseOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.on, "clauses", false, "split each query into clauses (sentences, \";\", \"and then\", \", then\", \"and\" before an action verb, ...), rank the whole query and every clause, and merge the rankings so that each need's tools reach the top (rerank.Clauses); a query of one clause ranks as before")
	fs.StringVar(&c.merge, "clauses-merge", string(rerank.DefaultClauseMerge), "-clauses: max (each tool's best normalised score over the whole query and the clauses), mix (w·whole + (1-w)·best clause) or rrf (w/(60+rank in whole) + (1-w)·best 1/(60+rank in a clause))")
	fs.StringVar(&c.norm, "clauses-norm", string(rerank.DefaultClauseNorm), "-clauses max and mix: each ranking's scores normalised per query: zscore, minmax, or off (the raw scores)")
	fs.Float64Var(&c.whole, "clauses-whole", rerank.DefaultClauseWhole, "-clauses mix and rrf: the whole query's weight w in (0, 1]")
	fs.IntVar(&c.minWords, "clauses-min-words", rerank.DefaultClauseMinWords, "-clauses: a clause of fewer words is merged into its neighbour")
	fs.IntVar(&c.depth, "clauses-depth", rerank.DefaultClauseDepth, "-clauses: how many tools of each ranking are merged")
}

// check records which -clauses-* flags were given and refuses them without -clauses.
func (c *clauseOptions) check(given map[string]bool) error {
	for _, name := range []string{"clauses-merge", "clauses-norm", "clauses-whole", "clauses-min-words", "clauses-depth"} {
		if given[name] {
			c.givenExtra = append(c.givenExtra, "-"+name)
		}
	}
	if !c.on && len(c.givenExtra) > 0 {
		return fmt.Errorf("%s apply to -clauses", c.givenExtra[0])
	}
	if !c.on {
		return nil
	}
	_, err := c.options()
	return err
}

// options returns the rerank.ClauseOptions of the flags, nil without -clauses.
func (c *clauseOptions) options() (*rerank.ClauseOptions, error) {
	if !c.on {
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
