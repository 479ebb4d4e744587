package losses

import (
	"math"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
)

// COLTEpsilon clips the probabilities inside COLTListwise's logarithms to [ε, 1-ε].
const COLTEpsilon = 1e-7

// COLTListwise is COLT's list-wise multi-label loss (Qu et al., "Towards Completeness-Oriented
// Tool Retrieval for Large Language Models", 2024).
//
// For each query the list holds L tools (its positives plus sampled negatives). scores
// [B, L] are the model's scores; labels [B, L] mark the positives (bool, or numeric with
// y > 0 a positive: the target is p_l = y_l / Σ y, i.e. 1/|positives| for binary labels);
// mask [B, L] marks real entries against padding (nil: all real). With p̂ = softmax over the
// real entries of the list,
//
//	loss_i = -Σ_l [ p_l log p̂_l + (1 - p_l) log(1 - p̂_l) ]   (real entries l only)
//
// with p̂_l and 1 - p̂_l clipped to [COLTEpsilon, 1] inside the logarithms (log p̂ is taken
// from the log-softmax, then clipped), averaged over the queries that have a positive
// (others get no weight; 0 if none has).
func COLTListwise(scores, labels, mask *Node) *Node {
	const fn = "COLTListwise"
	p, logq, weight := listSetup(fn, scores, labels, mask)
	logEps := math.Log(COLTEpsilon)
	q := Exp(logq)
	logQ := MaxScalar(logq, logEps)
	log1mQ := Log(MaxScalar(OneMinus(q), COLTEpsilon))
	per := Add(Mul(p, logQ), Mul(OneMinus(p), log1mQ))
	if mask = toBool(mask); mask != nil {
		per = Where(mask, per, ZerosLike(per))
	}
	return weightedMean(Neg(ReduceSum(per, -1)), weight)
}
