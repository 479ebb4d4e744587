package classifier

import (
	"context"
	"fmt"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rank"
)

// MultiTool reports whether relevant APIs span more than one tool (the hierarchy level above
// the API, data.Tool.Group); toolGroup is the per-API group index of data.Dataset.Groups.
func MultiTool(relevant []int, toolGroup []int) bool {
	for _, a := range relevant[min(1, len(relevant)):] {
		if toolGroup[a] != toolGroup[relevant[0]] {
			return true
		}
	}
	return false
}

// QueryTypes labels every judged query of a split: true for multi-tool queries.
func QueryTypes(d *data.Dataset, s *data.Split) map[int]bool {
	_, group := d.Groups()
	out := map[int]bool{}
	for _, q := range s.Judged() {
		out[q] = MultiTool(s.Relevant[q], group)
	}
	return out
}

// Targets returns the training target of each judged query of s for cfg: querytype one-hot
// [single, multi] ("ce") or [multi] ("bce"); mlc 1 for each relevant API (labels are the tool
// ids, in dataset order).
func Targets(cfg *Config, d *data.Dataset, s *data.Split) (map[int][]float32, error) {
	out := map[int][]float32{}
	switch cfg.Kind {
	case KindQueryType:
		for q, multi := range QueryTypes(d, s) {
			v := float32(0)
			if multi {
				v = 1
			}
			if cfg.Outputs() == 1 {
				out[q] = []float32{v}
			} else {
				out[q] = []float32{1 - v, v}
			}
		}
	case KindMLC:
		if len(cfg.Labels) != len(d.Tools) {
			return nil, fmt.Errorf("classifier mlc: %d labels but the dataset has %d tools", len(cfg.Labels), len(d.Tools))
		}
		for i, t := range d.Tools {
			if cfg.Labels[i] != t.ID {
				return nil, fmt.Errorf("classifier mlc: label %d is %q, dataset tool %d is %q: trained on other data", i, cfg.Labels[i], i, t.ID)
			}
		}
		for _, q := range s.Judged() {
			v := make([]float32, len(d.Tools))
			for _, t := range s.Relevant[q] {
				v[t] = 1
			}
			out[q] = v
		}
	default:
		return nil, fmt.Errorf("classifier: kind %q", cfg.Kind)
	}
	return out, nil
}

// ToolLabels are the mlc labels of a dataset: its tool ids, in order.
func ToolLabels(d *data.Dataset) []string {
	out := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		out[i] = t.ID
	}
	return out
}

// Ranker ranks all APIs by an mlc model's sigmoid scores (it implements rank.Ranker).
type Ranker struct{ M *Model }

// NewRanker checks that m is an mlc model for dataset d and returns its ranker.
func NewRanker(m *Model, d *data.Dataset) (*Ranker, error) {
	if m.Cfg.Kind != KindMLC {
		return nil, fmt.Errorf("classifier: a %s model does not rank tools (want mlc)", m.Cfg.Kind)
	}
	if _, err := Targets(m.Cfg, d, &data.Split{}); err != nil {
		return nil, err
	}
	return &Ranker{M: m}, nil
}

// QueryTokens implements rank.QueryTokenizer: text's length in tokens before truncation and
// the model's max length.
func (r *Ranker) QueryTokens(text string) (n, limit int) {
	return len(r.M.Tok.Single(text, 0)), r.M.Cfg.MaxLen
}

// Rank implements rank.Ranker.
func (r *Ranker) Rank(ctx context.Context, queries []string, k int) ([]rank.Ranking, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := r.M.Probabilities(queries)
	if err != nil {
		return nil, err
	}
	out := make([]rank.Ranking, len(p))
	for i, s := range p {
		out[i] = rank.TopK(s, k)
	}
	return out, nil
}
