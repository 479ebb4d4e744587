package evalcmd

import (
	"fmt"
	"strings"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/toolindex"
)

// buildIndex ranks with the exported index -index as toolindex.Load serves it (its first
// stage, its packaged refiner unless -no-refiner, its tool vectors), so the figures are those
// of what a server answers. The index's tools must be tools of the dataset (by id).
func buildIndex(o *options, d *data.Dataset) (rank.QueryRanker, string, error) {
	be, err := backend.Open(backend.Name(o.backend))
	if err != nil {
		return nil, "", fmt.Errorf("-backend: %w", err)
	}
	opts := []toolindex.Option{toolindex.WithBackend(be), toolindex.WithQuantization(o.quantize)}
	if o.noRefiner {
		opts = append(opts, toolindex.WithoutRefiner())
	}
	if o.hybrid != "" || o.hybridWeight != -1 {
		w, err := hybridWeight(o.hybrid, o.hybridWeight)
		if err != nil {
			return nil, "", err
		}
		opts = append(opts, toolindex.WithHybrid(o.hybrid, w))
	} else if o.noRecipe {
		opts = append(opts, toolindex.WithoutRecipe())
	}
	members, method, w, err := o.ens.Values()
	if err != nil {
		return nil, "", err
	}
	if len(members) > 0 {
		opts = append(opts, toolindex.WithEnsemble(method, members, w))
	}
	r, err := toolindex.Load(o.index, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("-index: %w", err)
	}
	desc := fmt.Sprintf("index %s (%s first stage", o.index, r.FirstStage())
	if q := r.Quantization(); q != "" {
		desc += ", " + string(q) + " weights"
	}
	if dir, cands, n := r.Refiner(); dir != "" {
		desc += fmt.Sprintf(", refiner N %d over %s candidates", n, cands)
	}
	if h, w := r.Hybrid(); h == toolindex.HybridRRF {
		desc += ", hybrid rrf with bm25"
	} else if h != "" {
		desc += fmt.Sprintf(", hybrid %s with bm25, dense weight %g", h, w)
	}
	if h, _ := r.Hybrid(); h != "" && o.hybrid == "" {
		desc += " (the model's recipe; -no-recipe: dense only)"
	}
	if m, mem, w := r.Ensemble(); m != "" {
		desc += fmt.Sprintf(", ensemble %s with %s", m, strings.Join(mem, ", "))
		if len(w) > 0 {
			desc += ", weights " + joinWeights(w)
		}
	}
	return evaluate.IndexRanker(r, d), desc + ")", nil
}

// hybridWeight checks -hybrid and -hybrid-weight (w, -1 when not given) as serve does and
// returns the dense weight: 0 for rrf, 0.5 by default for minmax and zscore.
func hybridWeight(method string, w float64) (float64, error) {
	switch method {
	case "":
		return 0, fmt.Errorf("-hybrid-weight needs -hybrid minmax or zscore")
	case toolindex.HybridRRF:
		if w != -1 {
			return 0, fmt.Errorf("-hybrid-weight applies to -hybrid minmax or zscore; rrf has no weight")
		}
		return 0, nil
	case toolindex.HybridMinMax, toolindex.HybridZScore:
		if w == -1 {
			return 0.5, nil
		}
		if !(w >= 0 && w <= 1) {
			return 0, fmt.Errorf("-hybrid-weight %g: want a weight in [0, 1]", w)
		}
		return w, nil
	}
	return 0, fmt.Errorf("-hybrid %q: want rrf, minmax or zscore", method)
}
