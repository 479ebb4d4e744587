package losses

import (
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
	"github.com/gomlx/gomlx/support/exceptions"
)

// BCEWithLogits is binary cross-entropy on logits, for cross-encoders and multi-label
// classifiers: the mean over the entries selected by mask of
//
//	-[y log σ(x) + (1-y) log(1-σ(x))] = softplus(x) - x·y
//
// computed without overflow for any x (softplus(x) = max(x,0) + log1p(e^-|x|), whose
// autodiff gradient is σ(x) - y). logits is any float shape; labels has its dimensions (float in
// [0, 1], or bool); mask (bool, or numeric with non-zero = keep) has its dimensions or is nil
// for all entries. With nothing selected the loss is 0.
func BCEWithLogits(logits, labels, mask *Node) *Node {
	const fn = "BCEWithLogits"
	if logits == nil || labels == nil {
		exceptions.Panicf("%s: logits and labels are required", fn)
	}
	if !logits.DType().IsFloat() {
		exceptions.Panicf("%s: logits must be float, got %s", fn, logits.Shape())
	}
	checkMask(fn, "labels", labels, logits)
	checkMask(fn, "mask", mask, logits)
	y := labelsAs(labels, logits.DType())
	per := Sub(StableSoftplus(logits), Mul(logits, y))
	return maskedMean(per, toBool(mask))
}

// StableSoftplus is log(1 + e^x) as max(x,0) + log1p(e^-|x|): stable for any x, and built from ops
// every backend has (GoMLX's Softplus goes through IsFinite, which ONNX Runtime lacks).
func StableSoftplus(x *Node) *Node {
	return Add(Max(x, ZerosLike(x)), Log1p(Exp(Neg(Abs(x)))))
}

// maskedMean is the mean of x over the entries where mask is true (all when mask is nil);
// 0 if none is.
func maskedMean(x, mask *Node) *Node {
	if mask == nil {
		return ReduceAllMean(x)
	}
	zero := ZerosLike(x)
	sum := ReduceAllSum(Where(mask, x, zero))
	count := ReduceAllSum(Where(mask, OnesLike(x), zero))
	return Div(sum, MaxScalar(count, 1))
}
