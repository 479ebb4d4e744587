package toolret

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank"
)

// DefaultCompareSamples is CompareConfig.Samples' default.
const DefaultCompareSamples = 10000

// CompareConfig configures Compare (eval -compare A,B).
type CompareConfig struct {
	// A and B are the two rankings compared, each named as an entry of EvalConfig.Fuse:
	// "bm25", "run:RUN", "model:REF", "index:DIR" or a TREC run file (eval -save-run).
	A, B string
	// Samples is the number of paired bootstrap resamples and of random sign flips of the
	// randomization test (0: DefaultCompareSamples; eval -compare-samples); Seed seeds them
	// (eval -seed).
	Samples int
	Seed    uint64
	// Eval is where and how A and B rank, as Fuse's entries rank: Data and its view
	// (Holdout, else the view the first trained run of SplitRun, A and B recorded), Split,
	// SplitRun, BM25, Vectors, Lengths, Quantize, Backend, Cutoffs and Log. Its rankers (Run,
	// Model, Index, Fuse, Rerank), Fusion fields, Clauses and rounds are refused.
	Eval EvalConfig
}

// CompareReport is what Compare returns.
type CompareReport struct {
	// Dataset and Split name what was ranked; Queries is the number of judged queries compared.
	Dataset, Split string
	Queries        int
	// Metrics are one row per metric (recall, ndcg and comp at each cutoff): the means of A
	// and B, B − A with its 95% paired-bootstrap interval, and the p-value of a paired
	// randomization test (metrics.CompareAll).
	Metrics []metrics.Comparison
	// Took is how long ranking and comparing took (loading the dataset not included).
	Took time.Duration
}

// Compare ranks the judged queries of cfg.Eval's split with A and with B, scores both query
// by query and tests each metric's difference B − A.
func Compare(ctx context.Context, cfg CompareConfig) (*CompareReport, error) {
	ec := cfg.Eval
	switch {
	case cfg.A == "" || cfg.B == "":
		return nil, fmt.Errorf("evaluate: Compare A %q, B %q: want two rankings (bm25, run:RUN, model:REF, index:DIR or a TREC run file)", cfg.A, cfg.B)
	case ec.Run != "" || ec.Model != "" || ec.Index != "" || len(ec.Fuse) > 0 || ec.Rerank != nil:
		return nil, errors.New("evaluate: Compare ranks its own A and B: not with Eval's Run, Model, Index, Fuse or Rerank")
	case ec.Fusion != "" || len(ec.FusionWeights) > 0 || ec.FusionK != 0 || ec.FusionDepth != 0 || ec.FusionDev || ec.Clauses != nil:
		return nil, errors.New("evaluate: Compare: Eval's Fusion fields and Clauses do not apply")
	case cfg.Samples < 0:
		return nil, fmt.Errorf("evaluate: Compare Samples %d: want a number > 0 (0: %d)", cfg.Samples, DefaultCompareSamples)
	}
	samples := cfg.Samples
	if samples == 0 {
		samples = DefaultCompareSamples
	}
	ec.Fuse = []string{cfg.A, cfg.B} // the entries' runs pick the view and the dev split as Fuse's do
	if err := ec.check(); err != nil {
		return nil, err
	}
	if ec.Split == "" {
		ec.Split = "test"
	}
	d, err := ec.openView()
	if err != nil {
		return nil, err
	}
	s, _, dev, err := ec.split(d)
	if err != nil {
		return nil, err
	}
	be, err := backend.Open(backend.Name(ec.Backend))
	if err != nil {
		return nil, err
	}
	qs, rel := fusion.SplitQueries(d, s)
	if len(ec.Cutoffs) == 0 {
		ec.Cutoffs = metrics.DefaultKs
	}
	depth := 0
	for _, k := range ec.Cutoffs {
		depth = max(depth, k)
	}
	per := make([]map[string][]float64, 2)
	start := time.Now()
	for i, it := range ec.Fuse {
		in, cleanup, err := fuseInput(ctx, ec, d, s, dev, it, "Compare", be)
		if err == nil {
			var rk []rank.Ranking
			rk, err = in.Rank(ctx, qs, depth)
			if err == nil {
				per[i] = metrics.PerQuery(rk, rel, ec.Cutoffs)
			}
		}
		cleanup()
		if err != nil {
			return nil, err
		}
	}
	rows, err := metrics.CompareAll(per[0], per[1], ec.Cutoffs, samples, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("evaluate: Compare: %w", err)
	}
	return &CompareReport{Dataset: d.Name, Split: s.Name, Queries: len(qs), Metrics: rows, Took: time.Since(start)}, nil
}
