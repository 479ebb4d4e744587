package evalcmd

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/rerank"
)

// parseGridM parses "10:30,10:50" into (m_s, m_u) pairs with m_s < m_u.
func parseGridM(s string) ([][2]int, error) {
	var out [][2]int
	for _, f := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(f), ":")
		ms, err1 := strconv.Atoi(a)
		mu, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || ms <= 0 || mu <= ms {
			return nil, fmt.Errorf("-grid-m %q: want m_s:m_u pairs with 0 < m_s < m_u, separated by commas", s)
		}
		out = append(out, [2]int{ms, mu})
	}
	return out, nil
}

// parseWeight parses -weight: "dev" (nil: tune w ∈ {0, 0.1, …, 1} on the retriever's dev
// split) or a fixed w in [0, 1].
func parseWeight(s string) (*float64, error) {
	if s == "dev" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0 && f <= 1) {
		return nil, fmt.Errorf("-weight %q: want dev or a number in [0, 1]", s)
	}
	return &f, nil
}

// tuneOptions are the rerank grid search's settings: -grid-metric, -min-t, progress on stderr.
func tuneOptions(r *rerankOptions) (rerank.TuneOptions, error) {
	c := evaluate.RerankConfig{Metric: r.gridMetric, MinT: &r.minT, Log: os.Stderr}
	return c.TuneOptions()
}

// rerankConfig turns the rerank flags into the library's configuration; plain is Rerank-m
// (-method rerank-m: the cross-encoder reranks the top -depth).
func rerankConfig(o *options, plain bool) (evaluate.RerankConfig, error) {
	r := &o.rr
	c := evaluate.RerankConfig{
		FirstStage: r.retriever, Reranker: r.reranker, Scorer: r.scorer, Classifier: r.classifier,
		Params: r.params(), OracleType: r.oracleType, Grid: r.grid, Metric: r.gridMetric, MinT: &r.minT,
		Interpolate: r.interpolate, Vectors: o.vectors, Ablations: o.ablations, Log: os.Stderr,
	}
	if plain {
		c.Depth = r.depth
	}
	switch {
	case plain || r.noHierarchy:
		c.Mode = rerank.ModeNone
	case r.only != "":
		m, err := rerank.ParseMode(r.only)
		if err != nil || (m != rerank.ModeSingle && m != rerank.ModeMulti) {
			return c, fmt.Errorf("-only %q: want single or multi", r.only)
		}
		c.Mode = m
	}
	var err error
	if c.GridM, err = parseGridM(r.gridM); err != nil {
		return c, err
	}
	if _, err := rerank.ParseNorm(r.interpolate); err != nil {
		return c, fmt.Errorf("-interpolate: %w", err)
	}
	if r.interpolate == "" { // ParseNorm's "" is off; the library's is its default, minmax
		c.Interpolate = "off"
	}
	c.Weight, err = parseWeight(r.weight)
	return c, err
}

// setupRerank checks the rerank flags and loads the runs they name (evaluate.RerankConfig.Setup).
// plain is Rerank-m (no truncation by seen/unseen, no hierarchy step).
func setupRerank(o *options, d *data.Dataset, plain bool) (*evaluate.Rerank, error) {
	c, err := rerankConfig(o, plain)
	if err != nil {
		return nil, err
	}
	s, err := rerankEnv(o, d, &c)
	if err != nil {
		return nil, err
	}
	return c.Setup(d, s)
}

// rerankEnv sets c's backend (-backend) and returns the split -split names.
func rerankEnv(o *options, d *data.Dataset, c *evaluate.RerankConfig) (*data.Split, error) {
	be, err := backend.Open(backend.Name(o.backend))
	if err != nil {
		return nil, err
	}
	c.Backend = be
	s, err := d.Split(o.split)
	if err != nil {
		return nil, fmt.Errorf("-split: %w", err)
	}
	return s, nil
}
