package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// Ensemble is the flags that serve an index fused with other indexes (toolindex.WithEnsemble):
// -ensemble DIR,DIR, -ensemble-fusion METHOD, -ensemble-weights W,W,... (eval and serve).
type Ensemble struct {
	members, fusion, weights *string
}

// EnsembleFlags registers the ensemble flags on fs.
func EnsembleFlags(fs *flag.FlagSet) *Ensemble {
	return &Ensemble{
		members: fs.String("ensemble", "", "more exported indexes over -index's tools, comma-separated, fused with it per query (the same recipe trained with other seeds, say; eval -method fusion -runs run:A,run:B,... measures it): each ranks its top max(k, 100)"),
		fusion:  fs.String("ensemble-fusion", "", "with -ensemble: rrf (k 60, no weights), minmax or zscore (-ensemble-weights); default zscore with weights, else rrf"),
		weights: fs.String("ensemble-weights", "", "with -ensemble minmax|zscore: one weight per index, -index's first, comma-separated (eval -method fusion -weight dev prints them in that order)"),
	}
}

// Values returns the ensemble the flags give: no members (and no error) when -ensemble is not
// set, or e is nil. The method and weights are checked in full by toolindex.Load; here only their spelling.
func (e *Ensemble) Values() (members []string, method string, w []float64, err error) {
	if e == nil { // a command's options made without the flags
		return nil, "", nil, nil
	}
	if *e.members == "" {
		if *e.fusion != "" || *e.weights != "" {
			return nil, "", nil, fmt.Errorf("-ensemble-fusion and -ensemble-weights need -ensemble")
		}
		return nil, "", nil, nil
	}
	for _, m := range strings.Split(*e.members, ",") {
		if m = strings.TrimSpace(m); m == "" {
			return nil, "", nil, fmt.Errorf("-ensemble %q: an empty directory name", *e.members)
		}
		members = append(members, m)
	}
	if *e.weights != "" {
		for i, s := range strings.Split(*e.weights, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return nil, "", nil, fmt.Errorf("-ensemble-weights %q: weight %d: %w", *e.weights, i+1, err)
			}
			w = append(w, v)
		}
	}
	method = *e.fusion
	if method == "" {
		method = "rrf"
		if len(w) > 0 {
			method = "zscore"
		}
	}
	return members, method, w, nil
}
