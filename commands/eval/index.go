package evalcmd

import (
	"fmt"

	"github.com/toolret/toolret/toolindex"
)

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
