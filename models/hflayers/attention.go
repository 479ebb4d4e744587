package hflayers

import (
	"math"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/attention"
	"github.com/gomlx/gomlx/ml/model"
)

// Attention is an encoder's self-attention softmax(q·kᵀ/√dh + addMask)·v for q, k and v
// [batch, seq, heads, dh] and the additive mask addMask [batch, seq, seq] (0 where a token
// may attend, Lowest where not), with dropout at rate on the probabilities while the scope
// trains; the context is [batch, seq, heads, dh], in q's dtype.
//
// It is the backend's fused attention when it has one (inference), otherwise (or with
// attention dropout) the decomposed graph. The go backend's fused attention kernel is slower
// than its matmuls at these sizes (bench encode, 6 layers, hidden 384, 300 ToolLens queries:
// 58 texts/s fused, 210 decomposed), so there attention always runs decomposed; onnx's fused
// one is faster (219 vs 199). With mixed precision (ComputeParam) the two products run in the
// compute dtype (ComputeEinsum) and the mask and softmax in q's: the decomposed graph.
func Attention(scope *model.Scope, q, k, v, addMask *Node, rate float64) *Node {
	g, dt := q.Graph(), q.DType()
	dims := q.Shape().Dimensions
	batch, seq, dh := dims[0], dims[1], dims[3]
	scale := 1 / math.Sqrt(float64(dh))
	if ComputeDType(scope, g, dt) != dt {
		scores := MulScalar(ComputeEinsum(scope, "bqhd,bkhd->bhqk", q, k), scale)
		probs := Softmax(Add(scores, Reshape(addMask, batch, 1, seq, seq)), -1)
		return ComputeEinsum(scope, "bhqk,bkhd->bqhd", Dropout(scope, probs, rate), v)
	}
	opts := attention.CoreOptions{Scale: scale, AttentionMask: addMask, Scope: scope,
		DisableFusion: g.Backend() != nil && g.Backend().String() == "go"} // String is the short name; Name is "Go Backend"
	if rate > 0 && scope.IsTraining(g) {
		opts.DropoutRate = Scalar(g, dt, rate)
	}
	ctx, _ := attention.Core(q, k, v, attention.LayoutBSHD, opts)
	return ctx
}
