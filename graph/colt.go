package graph

import (
	"fmt"

	"github.com/toolret/toolret/data"
)

// COLTGraphs are COLT's three bipartite graphs, built from one training split.
type COLTGraphs struct {
	// QueryTool joins each training query to its relevant tools (NormSymmetric);
	// len(d.Queries) × len(d.Tools).
	QueryTool *Bipartite
	// QueryScene joins each training query to its scene (NormSymmetric);
	// len(d.Queries) × len(d.Scenes).
	QueryScene *Bipartite
	// SceneTool joins each scene of a training query to its tools (NormLeftMean, so
	// AggregateLeft gives a scene the mean of its tools); len(d.Scenes) × len(d.Tools).
	// Scenes met only by non-training queries get no edges.
	SceneTool *Bipartite
}

// FromSplit builds COLTGraphs from the training split train of d (a split of d.Splits, or
// one returned by d.CarveDev). Only train's judgements and the scenes of its queries are
// used, so no evaluation query or scene leaks into the graphs. Node indices are the dataset's
// dense query, tool and scene indices.
func FromSplit(d *data.Dataset, train *data.Split) (*COLTGraphs, error) {
	if d == nil || train == nil {
		return nil, fmt.Errorf("colt graphs: nil dataset or split")
	}
	nq, nt, ns := len(d.Queries), len(d.Tools), len(d.Scenes)
	if ns == 0 {
		return nil, fmt.Errorf("colt graphs: dataset %s has no scenes", d.Name)
	}
	qt, err := New(nq, nt, train.Pairs(), NormSymmetric)
	if err != nil {
		return nil, fmt.Errorf("colt graphs: %s query-tool: %w", train.Name, err)
	}
	var qsPairs, stPairs [][2]int
	seen := make([]bool, ns)
	for _, q := range train.Queries {
		if len(train.Relevant[q]) == 0 {
			continue
		}
		s, ok := train.Scene[q]
		if !ok {
			return nil, fmt.Errorf("colt graphs: %s query %q has no scene", train.Name, d.Queries[q].ID)
		}
		if s < 0 || s >= ns {
			return nil, fmt.Errorf("colt graphs: %s query %d: scene %d out of range [0, %d)", train.Name, q, s, ns)
		}
		qsPairs = append(qsPairs, [2]int{q, s})
		if !seen[s] {
			seen[s] = true
			for _, t := range d.Scenes[s] {
				stPairs = append(stPairs, [2]int{s, t})
			}
		}
	}
	if len(qsPairs) == 0 {
		return nil, fmt.Errorf("colt graphs: split %s assigns no scene to its queries", train.Name)
	}
	qs, err := New(nq, ns, qsPairs, NormSymmetric)
	if err != nil {
		return nil, fmt.Errorf("colt graphs: %s query-scene: %w", train.Name, err)
	}
	st, err := New(ns, nt, stPairs, NormLeftMean)
	if err != nil {
		return nil, fmt.Errorf("colt graphs: %s scene-tool: %w", train.Name, err)
	}
	return &COLTGraphs{QueryTool: qt, QueryScene: qs, SceneTool: st}, nil
}
