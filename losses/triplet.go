package losses

import (
	"fmt"
	"strings"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
	"github.com/gomlx/gomlx/support/exceptions"
)

// Distance selects the metric of Triplet.
type Distance int

const (
	// DistCosine is 1 - cos(a, b).
	DistCosine Distance = iota
	// DistEuclidean is ‖a - b‖₂.
	DistEuclidean
)

// String returns "cosine" or "euclidean".
func (d Distance) String() string {
	switch d {
	case DistCosine:
		return "cosine"
	case DistEuclidean:
		return "euclidean"
	}
	return fmt.Sprintf("Distance(%d)", int(d))
}

// ParseDistance parses "cosine" (or "cos") and "euclidean" (or "l2"), case-insensitively.
func ParseDistance(s string) (Distance, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "cosine", "cos":
		return DistCosine, nil
	case "euclidean", "l2":
		return DistEuclidean, nil
	}
	return 0, fmt.Errorf("distance %q: want cosine or euclidean", s)
}

// Triplet is the margin ranking loss mean over triplets of max(0, d(a, p) - d(a, n) + margin).
//
// anchor and positive are [B, D]; negative is [B, D] (one triplet per row) or [B, K, D]
// (K triplets per anchor, all averaged). The Euclidean distance is
// sqrt(max(‖a-b‖², 1e-24)) so that it has a finite gradient when a == b.
func Triplet(anchor, positive, negative *Node, margin float64, dist Distance) *Node {
	const fn = "Triplet"
	checkRank(fn, "anchor", anchor, 2)
	checkRank(fn, "positive", positive, 2)
	checkSameShape(fn, "anchor", anchor, "positive", positive)
	if negative == nil {
		exceptions.Panicf("%s: negative is nil", fn)
	}
	b, d := anchor.Shape().Dim(0), anchor.Shape().Dim(1)
	switch negative.Rank() {
	case 2:
		checkSameShape(fn, "anchor", anchor, "negative", negative)
		negative = InsertAxes(negative, 1)
	case 3:
		checkRank(fn, "negative", negative, 3)
		if negative.Shape().Dim(0) != b || negative.Shape().Dim(2) != d || negative.DType() != anchor.DType() {
			exceptions.Panicf("%s: negative %s must be [%d, K, %d] %s", fn, negative.Shape(), b, d, anchor.DType())
		}
	default:
		exceptions.Panicf("%s: negative must be [B, D] or [B, K, D], got %s", fn, negative.Shape())
	}
	a := InsertAxes(anchor, 1)                       // [B, 1, D]
	dp := distance(a, InsertAxes(positive, 1), dist) // [B, 1]
	dn := distance(a, negative, dist)                // [B, K]
	return ReduceAllMean(MaxScalar(AddScalar(Sub(dp, dn), margin), 0))
}

// distance is the row-wise distance along the last axis, broadcasting a over b's axis 1.
func distance(a, b *Node, dist Distance) *Node {
	switch dist {
	case DistCosine:
		return OneMinus(ReduceSum(Mul(Normalize(a), Normalize(b)), -1))
	case DistEuclidean:
		return Sqrt(MaxScalar(ReduceSum(Square(Sub(a, b)), -1), normEpsilon*normEpsilon))
	}
	exceptions.Panicf("Triplet: unknown %s", dist)
	return nil
}
