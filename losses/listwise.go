package losses

import (
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
	"github.com/gomlx/gomlx/support/exceptions"
)

// ListwiseCE is the listwise softmax cross-entropy over candidate lists with one or more
// positives (ListNet with binary or graded labels).
//
// scores [B, L] are a model's scores of each query's L candidates; labels [B, L] are the
// relevance grades (≥ 0, float or bool); mask [B, L] marks real entries (true) against
// padding (false), or is nil. The target is p_l = y_l / Σ y over the real entries, the
// prediction q = softmax over the real entries, and
//
//	loss_i = -Σ_l p_l log q_l
//
// averaged over the queries with at least one positive (others have no target and get no
// weight; the loss is 0 if no query has one).
func ListwiseCE(scores, labels, mask *Node) *Node {
	const fn = "ListwiseCE"
	p, logq, weight := listSetup(fn, scores, labels, mask)
	perQuery := Neg(ReduceSum(Mul(p, logq), -1)) // [B]
	return weightedMean(perQuery, weight)
}

// listSetup validates list-loss inputs and returns the target distribution p [B, L] (zero
// on padding and for queries without positives), the masked log-softmax of scores [B, L]
// (zero on padding) and the per-query weight [B] (1 if the query has a positive, else 0).
func listSetup(fn string, scores, labels, mask *Node) (p, logq, weight *Node) {
	checkRank(fn, "scores", scores, 2)
	if labels == nil {
		exceptions.Panicf("%s: labels are required", fn)
	}
	checkMask(fn, "labels", labels, scores)
	checkMask(fn, "mask", mask, scores)
	mask = toBool(mask)
	y := labelsAs(labels, scores.DType())
	if mask != nil {
		y = Where(mask, y, ZerosLike(y))
	}
	total := ReduceAndKeep(y, ReduceSum, -1) // [B, 1]
	has := IsPositive(total)
	p = Div(y, Where(has, total, OnesLike(total)))
	logq = maskedLogSoftmax(scores, mask)
	weight = ConvertDType(Reshape(has, scores.Shape().Dim(0)), scores.DType())
	return p, logq, weight
}

// weightedMean is the mean of x over the entries whose weight w is 1 (weights are 0 or 1);
// zero-weight entries are excluded from the value and the gradient, and the result is 0
// when every weight is 0.
func weightedMean(x, w *Node) *Node {
	x = Where(IsPositive(w), x, ZerosLike(x))
	return Div(ReduceAllSum(Mul(x, w)), MaxScalar(ReduceAllSum(w), 1))
}
