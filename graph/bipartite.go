// Package graph holds the bipartite graphs and the LightGCN propagation of COLT
// (Qu et al., "Towards Completeness-Oriented Tool Retrieval for Large Language Models", 2024):
// query–tool, query–scene and scene–tool graphs built from training pairs only, normalised
// on the host, with seeded per-epoch edge dropout, and propagated in GoMLX with edge lists,
// Gather and ScatterSum (never a dense N×N matrix).
//
// The package name clashes with GoMLX's core/graph: import it under another name, e.g.
//
//	tgraph "github.com/toolret/toolret/graph"
package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/gomlx/gomlx/core/tensors"
)

// Norm selects how a Bipartite's edge weights are derived from its degrees.
type Norm int

const (
	// NormSymmetric is LightGCN's D^-1/2 A D^-1/2 on the bipartite adjacency
	// [[0, R], [Rᵀ, 0]]: w(l, r) = 1 / sqrt(deg(l) · deg(r)).
	NormSymmetric Norm = iota
	// NormLeftMean row-normalises by the left node: w(l, r) = 1 / deg(l), so aggregating to
	// the left (AggregateLeft) averages a left node's right neighbours, e.g. a scene's
	// embedding as the mean of its tools'.
	NormLeftMean
	// NormNone keeps every weight at 1.
	NormNone
)

// String names the normalisation.
func (n Norm) String() string {
	switch n {
	case NormSymmetric:
		return "symmetric"
	case NormLeftMean:
		return "left-mean"
	case NormNone:
		return "none"
	}
	return fmt.Sprintf("Norm(%d)", int(n))
}

// Bipartite is a weighted bipartite graph between NLeft left nodes (e.g. queries) and NRight
// right nodes (e.g. tools) as an edge list: edge e joins Left[e] and Right[e] with weight
// Weight[e]. Constructors sort edges by (left, right) and drop duplicates. Edges with weight
// 0 are padding (see Pad): they join node 0 to node 0 and contribute nothing.
type Bipartite struct {
	NLeft, NRight int
	Left, Right   []int32
	Weight        []float32
	// Norm is the normalisation Weight was computed with; Dropout re-applies it.
	Norm Norm
}

// New builds a Bipartite from (left, right) index pairs, e.g. data.Split.Pairs() of the
// training split for the query–tool graph. Duplicate pairs are merged; indices must lie in
// [0, nLeft) and [0, nRight).
func New(nLeft, nRight int, pairs [][2]int, norm Norm) (*Bipartite, error) {
	left := make([]int32, len(pairs))
	right := make([]int32, len(pairs))
	for i, p := range pairs {
		if p[0] < 0 || p[0] >= nLeft || p[1] < 0 || p[1] >= nRight {
			return nil, fmt.Errorf("bipartite graph: pair %d (%d, %d) out of range [0, %d) × [0, %d)", i, p[0], p[1], nLeft, nRight)
		}
		left[i], right[i] = int32(p[0]), int32(p[1])
	}
	return NewFromEdges(nLeft, nRight, left, right, norm)
}

// NewFromEdges builds a Bipartite from parallel edge-endpoint lists (copied), sorting and
// deduplicating them and computing the weights with norm.
func NewFromEdges(nLeft, nRight int, left, right []int32, norm Norm) (*Bipartite, error) {
	if nLeft <= 0 || nRight <= 0 || nLeft > math.MaxInt32 || nRight > math.MaxInt32 {
		return nil, fmt.Errorf("bipartite graph: node counts must be in [1, 2^31), got %d left, %d right", nLeft, nRight)
	}
	if len(left) != len(right) {
		return nil, fmt.Errorf("bipartite graph: %d left endpoints but %d right endpoints", len(left), len(right))
	}
	switch norm {
	case NormSymmetric, NormLeftMean, NormNone:
	default:
		return nil, fmt.Errorf("bipartite graph: unknown %s", norm)
	}
	idx := make([]int, len(left))
	for i := range idx {
		if left[i] < 0 || int(left[i]) >= nLeft || right[i] < 0 || int(right[i]) >= nRight {
			return nil, fmt.Errorf("bipartite graph: edge %d (%d, %d) out of range [0, %d) × [0, %d)", i, left[i], right[i], nLeft, nRight)
		}
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		i, j := idx[a], idx[b]
		if left[i] != left[j] {
			return left[i] < left[j]
		}
		return right[i] < right[j]
	})
	b := &Bipartite{NLeft: nLeft, NRight: nRight, Norm: norm}
	for n, i := range idx {
		if n > 0 {
			p := idx[n-1]
			if left[p] == left[i] && right[p] == right[i] {
				continue
			}
		}
		b.Left = append(b.Left, left[i])
		b.Right = append(b.Right, right[i])
	}
	b.Weight = make([]float32, len(b.Left))
	b.normalise()
	return b, nil
}

// normalise recomputes Weight from the degrees of the current edges according to b.Norm.
func (b *Bipartite) normalise() {
	degL := make([]int, b.NLeft)
	degR := make([]int, b.NRight)
	for e := range b.Left {
		degL[b.Left[e]]++
		degR[b.Right[e]]++
	}
	for e := range b.Left {
		l, r := b.Left[e], b.Right[e]
		switch b.Norm {
		case NormSymmetric:
			b.Weight[e] = float32(1 / math.Sqrt(float64(degL[l])*float64(degR[r])))
		case NormLeftMean:
			b.Weight[e] = float32(1 / float64(degL[l]))
		default:
			b.Weight[e] = 1
		}
	}
}

// NumEdges is the number of edges, padding included.
func (b *Bipartite) NumEdges() int { return len(b.Left) }

// DropoutMode says how weights are adjusted after edge dropout.
type DropoutMode int

const (
	// DropRenormalize recomputes the normalisation from the degrees of the kept edges, as
	// SGL-style edge dropout does (the adjacency is rebuilt and re-normalised from the kept
	// edges each epoch), so every node's aggregate keeps its scale.
	DropRenormalize DropoutMode = iota
	// DropRescale keeps the original normalised weights of the kept edges divided by the
	// keep probability, as the reference LightGCN implementation's __dropout_x does.
	DropRescale
)

// Dropout returns a copy of b (without padding) keeping each edge independently with
// probability 1 - rate, re-weighted according to mode. The draw is determined by (seed,
// epoch) alone (PCG seeded with both), so every epoch gets a fresh, reproducible graph. A
// rate of 0 returns an unpadded copy of b. Use Pad(b.NumEdges()) on the result to keep
// tensor shapes fixed across epochs and avoid recompiling the graph.
func (b *Bipartite) Dropout(rate float64, seed uint64, epoch int, mode DropoutMode) (*Bipartite, error) {
	if !(rate >= 0 && rate < 1) {
		return nil, fmt.Errorf("bipartite dropout: rate %g not in [0, 1)", rate)
	}
	if mode != DropRenormalize && mode != DropRescale {
		return nil, fmt.Errorf("bipartite dropout: unknown mode %d", mode)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(epoch)))
	out := &Bipartite{NLeft: b.NLeft, NRight: b.NRight, Norm: b.Norm}
	for e := range b.Left {
		if b.Weight[e] == 0 {
			continue // padding.
		}
		if rate > 0 && rng.Float64() < rate {
			continue
		}
		out.Left = append(out.Left, b.Left[e])
		out.Right = append(out.Right, b.Right[e])
		w := b.Weight[e]
		if mode == DropRescale {
			w = float32(float64(w) / (1 - rate))
		}
		out.Weight = append(out.Weight, w)
	}
	if mode == DropRenormalize {
		out.normalise()
	}
	return out, nil
}

// Pad returns a copy of b with zero-weight edges (0, 0) appended up to n edges, so that
// graphs of varying edge counts (after Dropout) share one tensor shape. It fails if b
// already has more than n edges.
func (b *Bipartite) Pad(n int) (*Bipartite, error) {
	if n < len(b.Left) {
		return nil, fmt.Errorf("bipartite pad: %d edges do not fit in %d", len(b.Left), n)
	}
	out := &Bipartite{NLeft: b.NLeft, NRight: b.NRight, Norm: b.Norm,
		Left:   make([]int32, n),
		Right:  make([]int32, n),
		Weight: make([]float32, n),
	}
	copy(out.Left, b.Left)
	copy(out.Right, b.Right)
	copy(out.Weight, b.Weight)
	return out, nil
}

// Tensors returns the edge list as tensors: left and right endpoints Int32 [E] and weights
// Float32 [E], the inputs Edges expects.
func (b *Bipartite) Tensors() (left, right, weight *tensors.Tensor) {
	n := len(b.Left)
	return tensors.FromFlatDataAndDimensions(append([]int32(nil), b.Left...), n),
		tensors.FromFlatDataAndDimensions(append([]int32(nil), b.Right...), n),
		tensors.FromFlatDataAndDimensions(append([]float32(nil), b.Weight...), n)
}
