package traincmd

import (
	"path/filepath"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/feedback"
)

// loadPRF loads the pseudo-relevance-feedback refiner of train feedback -rewriter prf: the
// judge run (kind detected) and the options, with the settings a collection records.
func loadPRF(run string, d *data.Dataset, bk compute.Backend, o feedback.PRFOptions) (*feedback.PRF, map[string]string, error) {
	j, kind, err := feedback.LoadJudge(run, d, bk)
	if err != nil {
		return nil, nil, err
	}
	prf, err := feedback.NewPRF(j, o)
	if err != nil {
		return nil, nil, err
	}
	abs, err := filepath.Abs(run)
	if err != nil {
		return nil, nil, err
	}
	s := prf.Settings()
	s["refiner"], s["prf-model"], s["prf-kind"] = "prf", abs, kind
	return prf, s, nil
}
