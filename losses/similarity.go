// Package losses holds toolret's retrieval losses as GoMLX graph functions: InfoNCE with
// hard negatives and false-negative masking, triplet, binary cross-entropy with logits,
// listwise softmax cross-entropy, and COLT's list-wise multi-label and cross-view
// contrastive losses.
//
// Every loss takes *graph.Node inputs and returns a scalar node of the inputs' float dtype.
// Like all GoMLX graph functions they panic on invalid shapes or options while the graph is
// being built; graph.Exec (Call, Exec1, ...) turns such panics into returned errors, so
// callers running losses inside an Exec get an error, never a crash. The host-side
// FalseNegativeMask returns errors.
package losses

import (
	"fmt"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
	"github.com/gomlx/gomlx/support/exceptions"
)

// Similarity selects how two embeddings are scored against each other.
type Similarity int

const (
	// SimCosine scores by the cosine of the angle between the embeddings (both are
	// L2-normalised first).
	SimCosine Similarity = iota
	// SimDot scores by the plain inner product.
	SimDot
)

// String returns "cosine" or "dot".
func (s Similarity) String() string {
	switch s {
	case SimCosine:
		return "cosine"
	case SimDot:
		return "dot"
	}
	return fmt.Sprintf("Similarity(%d)", int(s))
}

// ParseSimilarity parses "cosine" (or "cos") and "dot" (or "ip"), case-insensitively.
func ParseSimilarity(s string) (Similarity, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "cosine", "cos":
		return SimCosine, nil
	case "dot", "ip", "inner":
		return SimDot, nil
	}
	return 0, fmt.Errorf("similarity %q: want cosine or dot", s)
}

// normEpsilon bounds norms away from zero, as torch.nn.functional.normalize does, so that a
// zero embedding gives a zero (not NaN) normalised vector and a finite gradient.
const normEpsilon = 1e-12

// Normalize L2-normalises x along its last axis: x / max(‖x‖, 1e-12).
func Normalize(x *Node) *Node {
	sq := ReduceAndKeep(Square(x), ReduceSum, -1)
	norm := Sqrt(MaxScalar(sq, normEpsilon*normEpsilon))
	return Div(x, norm)
}

// Scores returns the [N, M] matrix of similarities between every row of a [N, D] and every
// row of b [M, D].
func Scores(a, b *Node, sim Similarity) *Node {
	checkRank("Scores", "a", a, 2)
	checkRank("Scores", "b", b, 2)
	if a.Shape().Dim(1) != b.Shape().Dim(1) || a.DType() != b.DType() {
		exceptions.Panicf("Scores: a %s and b %s must share the embedding dimension and dtype", a.Shape(), b.Shape())
	}
	switch sim {
	case SimCosine:
		a, b = Normalize(a), Normalize(b)
	case SimDot:
	default:
		exceptions.Panicf("Scores: unknown %s", sim)
	}
	return Einsum("nd,md->nm", a, b)
}

// checkRank panics unless x is a float tensor of the given rank.
func checkRank(fn, name string, x *Node, rank int) {
	if x == nil {
		exceptions.Panicf("%s: %s is nil", fn, name)
	}
	if x.Rank() != rank {
		exceptions.Panicf("%s: %s must have rank %d, got shape %s", fn, name, rank, x.Shape())
	}
	if !x.DType().IsFloat() {
		exceptions.Panicf("%s: %s must be a float tensor, got %s", fn, name, x.Shape())
	}
}

// checkSameShape panics unless a and b have the same shape.
func checkSameShape(fn, aName string, a *Node, bName string, b *Node) {
	if !a.Shape().Equal(b.Shape()) {
		exceptions.Panicf("%s: %s %s and %s %s must have the same shape", fn, aName, a.Shape(), bName, b.Shape())
	}
}

// checkTemperature panics unless t is a positive finite temperature.
func checkTemperature(fn string, t float64) {
	if !(t > 0) || t > 1e6 {
		exceptions.Panicf("%s: temperature must be in (0, 1e6], got %g", fn, t)
	}
}

// logSumExpMasked returns log Σ_{j: keep[i,j]} exp(logits[i,j]) along the last axis, shape
// [..., 1]. Excluded entries contribute neither to the value nor to the gradient (they are
// replaced before the exponential, so a huge excluded logit cannot produce Inf·0 = NaN).
// A row that keeps nothing gets a finite, meaningless value with a zero gradient: callers
// must give such rows zero weight.
func logSumExpMasked(logits, keep *Node) *Node {
	g := logits.Graph()
	zero := ScalarZero(g, logits.DType())
	var maxes *Node
	if keep == nil {
		maxes = StopGradient(ReduceAndKeep(logits, ReduceMax, -1))
	} else {
		maxes = StopGradient(MaskedReduceAndKeep(logits, keep, MaskedReduceMax, -1))
	}
	shifted := Sub(logits, maxes)
	if keep != nil {
		shifted = Where(keep, shifted, zero)
	}
	e := Exp(shifted)
	if keep != nil {
		e = Where(keep, e, zero)
	}
	sum := ReduceAndKeep(e, ReduceSum, -1)
	if keep != nil {
		sum = Where(IsPositive(sum), sum, OnesLike(sum)) // rows with nothing kept.
	}
	return Add(maxes, Log(sum))
}

// maskedLogSoftmax returns log softmax(logits) over the last axis restricted to keep (nil
// keeps all). Excluded entries are 0 (not -Inf), so that multiplying them by a zero weight
// stays finite; they carry no gradient.
func maskedLogSoftmax(logits, keep *Node) *Node {
	out := Sub(logits, logSumExpMasked(logits, keep))
	if keep != nil {
		out = Where(keep, out, ZerosLike(out))
	}
	return out
}

// toBool converts a mask to bool: bool masks are returned as is, numeric ones are true
// where non-zero. nil stays nil.
func toBool(mask *Node) *Node {
	if mask == nil || mask.DType() == dtypes.Bool {
		return mask
	}
	return NotEqual(mask, ScalarZero(mask.Graph(), mask.DType()))
}

// checkMask panics unless mask is nil or has the dimensions of ref.
func checkMask(fn, name string, mask, ref *Node) {
	if mask != nil && !slicesEqual(mask.Shape().Dimensions, ref.Shape().Dimensions) {
		exceptions.Panicf("%s: %s %s must have the dimensions of %s", fn, name, mask.Shape(), ref.Shape())
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// labelsAs converts labels (bool or numeric) to dtype.
func labelsAs(labels *Node, dtype dtypes.DType) *Node {
	if labels.DType() == dtype {
		return labels
	}
	return ConvertDType(labels, dtype)
}

// shapes2 is the Int32 shape [r, c], used for iota index grids.
func shapes2(r, c int) shapes.Shape { return shapes.Make(dtypes.Int32, r, c) }
