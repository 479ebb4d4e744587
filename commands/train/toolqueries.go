package traincmd

import (
	"flag"
	"fmt"

	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rundir"
)

// checkToolQueries checks -tool-queries n: not negative; only for -objective query2tool
// without -feedback. A resumed run made before the flag existed (its recorded flags lack
// it) trained without pseudo pairs: giving it n != 0 is refused, as the run would change
// what it trains on halfway.
func checkToolQueries(fs *flag.FlagSet, meta *rundir.Meta, n int, q2q, feedback bool) error {
	switch {
	case n < 0:
		return fmt.Errorf("-tool-queries %d: pseudo pairs per tool, must be >= 0", n)
	case n == 0:
		return nil
	case q2q:
		return fmt.Errorf("-tool-queries %d applies to -objective %s only (pseudo (query, tool) pairs; %s trains on query triplets)", n, biencoder.ObjectiveQuery2Tool, biencoder.ObjectiveQuery2Query)
	case feedback:
		return fmt.Errorf("-tool-queries %d is not supported with -feedback (its examples are feedback loops of real queries)", n)
	}
	if meta != nil {
		if _, ok := meta.Args["tool-queries"]; !ok {
			return fmt.Errorf("-tool-queries %d: run %s was trained before -tool-queries existed (as -tool-queries 0) and resumes so: omit -tool-queries", n, fs.Lookup("run").Value)
		}
	}
	return nil
}
