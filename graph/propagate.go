package graph

import (
	"fmt"

	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
	"github.com/gomlx/gomlx/support/exceptions"
)

// Edges is a Bipartite's edge list inside a computation graph.
type Edges struct {
	// NLeft and NRight are the node counts.
	NLeft, NRight int
	// Left and Right are the integer endpoint indices [E]; Weight the edge weights [E]
	// (any float dtype: it is converted to the embeddings' dtype).
	Left, Right, Weight *Node
}

// Const puts b's edge list into g as constants: for a graph that does not change between
// steps. For per-epoch dropout, feed b.Tensors() as Exec inputs and wrap them with
// Edges{NLeft: b.NLeft, NRight: b.NRight, Left: l, Right: r, Weight: w} instead.
func (b *Bipartite) Const(g *Graph) Edges {
	l, r, w := b.Tensors()
	return Edges{NLeft: b.NLeft, NRight: b.NRight, Left: ConstTensor(g, l), Right: ConstTensor(g, r), Weight: ConstTensor(g, w)}
}

// check panics unless e is a consistent edge list.
func (e Edges) check(fn string) {
	if e.Left == nil || e.Right == nil || e.Weight == nil {
		exceptions.Panicf("%s: Edges needs Left, Right and Weight", fn)
	}
	for _, x := range []struct {
		name string
		n    *Node
	}{{"Left", e.Left}, {"Right", e.Right}, {"Weight", e.Weight}} {
		if x.n.Rank() != 1 || x.n.Shape().Dim(0) != e.Left.Shape().Dim(0) {
			exceptions.Panicf("%s: edge %s %s must be [E] with E = %d", fn, x.name, x.n.Shape(), e.Left.Shape().Dim(0))
		}
	}
	if !e.Left.DType().IsInt() || !e.Right.DType().IsInt() || !e.Weight.DType().IsFloat() {
		exceptions.Panicf("%s: edges must be integer endpoints and float weights, got %s, %s, %s", fn,
			e.Left.DType(), e.Right.DType(), e.Weight.DType())
	}
}

// checkTable panics unless x is a float [n, D] embedding table.
func checkTable(fn, name string, x *Node, n int) {
	if x == nil || x.Rank() != 2 || x.Shape().Dim(0) != n || !x.DType().IsFloat() {
		shape := "nil"
		if x != nil {
			shape = x.Shape().String()
		}
		exceptions.Panicf("%s: %s embeddings must be float [%d, D], got %s", fn, name, n, shape)
	}
}

// aggregate returns out[to[e]] += w[e] · src[from[e]] over all edges, shape [n, D].
func aggregate(src, from, to, w *Node, n int) *Node {
	msgs := Gather(src, InsertAxes(from, -1))                      // [E, D]
	msgs = Mul(msgs, InsertAxes(ConvertDType(w, src.DType()), -1)) // [E, D]
	out := shapes.Make(src.DType(), n, src.Shape().Dim(1))
	return Scatter(InsertAxes(to, -1), msgs, out, false, false)
}

// AggregateLeft returns the [NLeft, D] table out[l] = Σ_{edges (l, r)} w · right[r], one
// sparse product with the bipartite adjacency (e.g. scene embeddings from tool embeddings
// over a NormLeftMean scene–tool graph: the mean of each scene's tools).
func AggregateLeft(right *Node, e Edges) *Node {
	const fn = "AggregateLeft"
	e.check(fn)
	checkTable(fn, "right", right, e.NRight)
	return aggregate(right, e.Right, e.Left, e.Weight, e.NLeft)
}

// AggregateRight returns the [NRight, D] table out[r] = Σ_{edges (l, r)} w · left[l].
func AggregateRight(left *Node, e Edges) *Node {
	const fn = "AggregateRight"
	e.check(fn)
	checkTable(fn, "left", left, e.NLeft)
	return aggregate(left, e.Left, e.Right, e.Weight, e.NRight)
}

// Combine selects how Propagate merges the per-layer embeddings E⁰ … E^K.
type Combine int

const (
	// CombineMean averages all K+1 layers including layer 0: LightGCN's and COLT's choice
	// (α_k = 1/(K+1)). The default.
	CombineMean Combine = iota
	// CombineSum adds all K+1 layers including layer 0.
	CombineSum
	// CombineLast returns only the last layer E^K.
	CombineLast
	// CombineNormSum adds E⁰ and the L2-normalised rows of every propagated layer E¹ … E^K,
	// as COLT's reference implementation does: each propagated layer counts as much as the
	// input whatever a node's degree, and an isolated node (all-zero layers) keeps E⁰.
	CombineNormSum
)

// String names the combination.
func (c Combine) String() string {
	switch c {
	case CombineMean:
		return "mean"
	case CombineSum:
		return "sum"
	case CombineLast:
		return "last"
	case CombineNormSum:
		return "normsum"
	}
	return fmt.Sprintf("Combine(%d)", int(c))
}

// Propagate runs LightGCN on a bipartite graph: with E⁰ = (left [NLeft, D], right
// [NRight, D]) and Â the graph's weighted adjacency [[0, W], [Wᵀ, 0]] (W from e, normally
// NormSymmetric so that Â = D^-1/2 A D^-1/2),
//
//	E^{k+1}_left = W E^k_right,   E^{k+1}_right = Wᵀ E^k_left,   k = 0 … layers-1,
//
// each layer an edge-list Gather + ScatterSum (memory O(E·D), no dense matrix), and returns
// the layers merged by combine (CombineMean: (E⁰ + … + E^K)/(K+1), LightGCN's and COLT's
// default). layers = 0 returns the inputs.
func Propagate(left, right *Node, e Edges, layers int, combine Combine) (outLeft, outRight *Node) {
	const fn = "Propagate"
	e.check(fn)
	checkTable(fn, "left", left, e.NLeft)
	checkTable(fn, "right", right, e.NRight)
	if left.DType() != right.DType() || left.Shape().Dim(1) != right.Shape().Dim(1) {
		exceptions.Panicf("%s: left %s and right %s must share dtype and D", fn, left.Shape(), right.Shape())
	}
	if layers < 0 {
		exceptions.Panicf("%s: layers must be >= 0, got %d", fn, layers)
	}
	switch combine {
	case CombineMean, CombineSum, CombineLast, CombineNormSum:
	default:
		exceptions.Panicf("%s: unknown %s", fn, combine)
	}
	sumL, sumR := left, right
	curL, curR := left, right
	for range layers {
		curL, curR = aggregate(curR, e.Right, e.Left, e.Weight, e.NLeft), aggregate(curL, e.Left, e.Right, e.Weight, e.NRight)
		if combine == CombineNormSum {
			sumL, sumR = Add(sumL, normalizeRows(curL)), Add(sumR, normalizeRows(curR))
		} else {
			sumL, sumR = Add(sumL, curL), Add(sumR, curR)
		}
	}
	switch combine {
	case CombineMean:
		return DivScalar(sumL, float64(layers+1)), DivScalar(sumR, float64(layers+1))
	case CombineSum, CombineNormSum:
		return sumL, sumR
	}
	return curL, curR
}

// normalizeRows L2-normalises the rows of x [N, D]; all-zero rows stay zero.
func normalizeRows(x *Node) *Node {
	sq := ReduceAndKeep(Square(x), ReduceSum, -1)
	return Div(x, Sqrt(MaxScalar(sq, 1e-24)))
}
