package hflayers

import (
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"
)

// ComputeParam is the graph parameter (model.Scope.SetGraphParam, a dtypes.DType) that sets
// the dtype of the matrix multiplications of the blocks at and below the scope it is set in:
// mixed precision. With dtypes.BFloat16 every Linear (Dense, and the LoRA adapters) and the
// attention score and context products of the encoders (ComputeEinsum) convert their inputs and
// weights to bfloat16, multiply, and convert the product back to the variables' dtype; the
// variables (fp32 master weights), biases, LayerNorm, softmax, activations, the loss and the
// optimizer state stay in the variables' dtype. Gradients flow through the conversions. Unset
// (or nil, or the variables' own dtype) everything runs in the variables' dtype, as before.
const ComputeParam = "hflayers_compute"

// ComputeDType returns the dtype the matrix multiplications of scope run in for graph g:
// ComputeParam when set, else dt (the variables' dtype).
func ComputeDType(scope *model.Scope, g *Graph, dt dtypes.DType) dtypes.DType {
	v, ok := scope.GetGraphParam(g, ComputeParam)
	if !ok || v == nil {
		return dt
	}
	if c, ok := v.(dtypes.DType); ok && c != dtypes.InvalidDType {
		return c
	}
	return dt
}

// ComputeEinsum is Einsum(eq, a, b) computed in the compute dtype of scope (ComputeDType): both
// operands are converted to it and the product back to a's dtype. Encoders use it for the
// attention score (q·kᵀ) and context (probs·v) products.
func ComputeEinsum(scope *model.Scope, eq string, a, b *Node) *Node {
	dt := a.DType()
	ct := ComputeDType(scope, a.Graph(), dt)
	if ct == dt {
		return Einsum(eq, a, b)
	}
	return ConvertDType(Einsum(eq, ConvertDType(a, ct), ConvertDType(b, ct)), dt)
}

// linear is x·wᵀ (+ b) with w [out, in] in the compute dtype of scope; the bias is added in
// x's dtype, after the product is converted back. Without mixed precision it is nn.Dense's
// (fused where the backend has it) x·wᵀ + b.
func linear(scope *model.Scope, x, w, b *Node) *Node {
	dt := x.DType()
	ct := ComputeDType(scope, x.Graph(), dt)
	if ct == dt {
		return nn.Dense(x, w, b, compute.DenseLayoutOutputsInput)
	}
	y := ConvertDType(nn.Dense(ConvertDType(x, ct), ConvertDType(w, ct), nil, compute.DenseLayoutOutputsInput), dt)
	if b != nil {
		y = Add(y, ExpandLeftToRank(b, y.Rank()))
	}
	return y
}

// ComputeDense is an HF Linear's x·wᵀ (+ b; w [out, in], b [out] or nil) followed by the
// optional activation, with the product in the compute dtype of scope (ComputeDType) and the
// bias and activation in x's dtype. Without mixed precision it is nn.Dense (fused where the
// backend has it). Encoders with their own Linear code (deberta, modernbert, qwen3, gemma3)
// use it.
func ComputeDense(scope *model.Scope, x, w, b *Node, act ...activation.Type) *Node {
	if ComputeDType(scope, x.Graph(), x.DType()) == x.DType() {
		return nn.Dense(x, w, b, compute.DenseLayoutOutputsInput, act...)
	}
	y := linear(scope, x, w, b)
	if len(act) > 0 {
		y = activation.Apply(act[0], y)
	}
	return y
}
