package losses

import (
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
)

// MultiPositiveCE is softmax cross-entropy with several positives per row, as the Tool2Vec
// paper trains MLC and ToolRefiner: q = softmax(scores) over the real entries of each row and
//
//	summed:     loss_i = -Σ_{l positive} log q_l
//	normalised: loss_i = -Σ_{l positive} log q_l / |positives|   (= ListwiseCE with 0/1 labels)
//
// scores [B, L]; labels [B, L] (> 0 marks a positive; graded labels weight their term);
// mask [B, L] marks real entries or is nil. Rows without a positive get no weight; the result
// is the mean over the other rows (0 if there is none).
func MultiPositiveCE(scores, labels, mask *Node, normalised bool) *Node {
	const fn = "MultiPositiveCE"
	p, logq, weight := listSetup(fn, scores, labels, mask)
	perRow := Neg(ReduceSum(Mul(p, logq), -1)) // normalised: [B]
	if !normalised {
		// p = y / Σy: scale back by Σy (the number of positives for 0/1 labels).
		y := labelsAs(labels, scores.DType())
		if mask != nil {
			y = Where(toBool(mask), y, ZerosLike(y))
		}
		perRow = Mul(perRow, ReduceSum(y, -1))
	}
	return weightedMean(perRow, weight)
}
