// Package hflayers holds the building blocks the HuggingFace-layout encoders (models/bert,
// models/deberta, models/mpnet) share, as GoMLX graph code and as ONNX graph code: variables
// named and initialised as HF's _init_weights does, Linear layers with HF's [out, in] weight
// layout, LayerNorm, dropout, self-attention (attention.go), and the activations config.json
// names.
package hflayers

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/toolret/toolret/models/encoder/onnxgraph"
)

// Spec is what the blocks need of an encoder's configuration.
type Spec struct {
	DType        dtypes.DType // of the variables and the computation
	InitRange    float64      // std of the normal initialisation of matrices (initializer_range)
	LayerNormEps float64      // layer_norm_eps
}

// Variable returns the variable name in scope, created with the given shape and an
// initializer following HF's _init_weights: normal(0, InitRange) for matrices and embeddings,
// zeros for biases, ones for LayerNorm scales (lazily, from the store's seed, when a graph
// first uses a variable that Init or LoadHF did not create).
func (s Spec) Variable(scope *model.Scope, g *Graph, name string, dims ...int) *Node {
	var init model.VariableInitializer
	switch {
	case name == "bias":
		init = initializer.Zero
	case name == "weight" && len(dims) == 1:
		init = initializer.One
	default:
		init = initializer.RandomNormalFn(scope, s.InitRange)
	}
	return scope.WithInitializer(init).VariableWithShape(name, shapes.Make(s.DType, dims...)).NodeValue(g)
}

// Dense is an HF Linear under scope (weight [out, in], bias [out]) with an optional fused
// activation.
//
// With a LoRA set for the scope in x's graph (LoRAParam) that targets it, the Linear gets
// the LoRA's low-rank update (see LoRA). With a compute dtype set (ComputeParam) the product
// runs in it, the bias and the activation in x's dtype.
func (s Spec) Dense(scope *model.Scope, x *Node, out int, act ...activation.Type) *Node {
	if l := loraOf(scope, x.Graph()); l != nil {
		return s.loraDense(scope, l, x, out, act...)
	}
	in := x.Shape().Dimensions[x.Rank()-1]
	w := s.Variable(scope, x.Graph(), "weight", out, in)
	b := s.Variable(scope, x.Graph(), "bias", out)
	return ComputeDense(scope, x, w, b, act...)
}

func shapeOf(s Spec, dims ...int) shapes.Shape { return shapes.Make(s.DType, dims...) }

// LayerNorm is an HF LayerNorm under scope over the last axis.
func (s Spec) LayerNorm(scope *model.Scope, x *Node) *Node {
	h := x.Shape().Dimensions[x.Rank()-1]
	gamma := s.Variable(scope, x.Graph(), "weight", h)
	beta := s.Variable(scope, x.Graph(), "bias", h)
	return nn.LayerNorm(x, []int{x.Rank() - 1}, s.LayerNormEps, gamma, beta, nil)
}

// Dropout drops x at rate while the scope trains; otherwise x is returned as is.
func Dropout(scope *model.Scope, x *Node, rate float64) *Node {
	if rate <= 0 || !scope.IsTraining(x.Graph()) {
		return x
	}
	return layers.Dropout(scope, x, Scalar(x.Graph(), x.DType(), rate))
}

// Activation maps an HF hidden_act to GoMLX's: "gelu" is the exact erf GELU (HF's default),
// "gelu_new" and "gelu_pytorch_tanh" the tanh approximation; also "relu" and "tanh".
func Activation(name string) activation.Type {
	switch name {
	case "relu":
		return activation.TypeRelu
	case "tanh":
		return activation.TypeTanh
	case "gelu_new", "gelu_pytorch_tanh":
		return activation.TypeGeluApprox
	}
	return activation.TypeGelu
}

// Lowest is torch.finfo(dtype).min, what HF adds to masked attention scores.
func Lowest(dt dtypes.DType) float64 {
	if dt == dtypes.Float64 {
		return -math.MaxFloat64
	}
	return -math.MaxFloat32
}

// TransposeWeight returns HF's Linear weight w [out, in] as [in, out], the layout ONNX's MatMul
// multiplies by.
func TransposeWeight(w []float32, in, out int) []float32 {
	wt := make([]float32, in*out)
	for o := 0; o < out; o++ {
		for i := 0; i < in; i++ {
			wt[i*out+o] = w[o*in+i]
		}
	}
	return wt
}

// ONNXLinear adds x·Wᵀ + b for the HF Linear name to g (param returns an HF parameter's
// values, nil after recording an error; then "" is returned).
func ONNXLinear(g *onnxgraph.Builder, param func(string) []float32, x, name string, in, out int) string {
	w, bias := param(name+".weight"), param(name+".bias")
	if w == nil || bias == nil {
		return ""
	}
	y := g.Op("MatMul", []string{x, g.F32(name+".weight_t", TransposeWeight(w, in, out), in, out)})
	return g.Op("Add", []string{y, g.F32(name+".bias", bias, out)})
}

// ONNXLayerNorm adds the HF LayerNorm name over the last axis (width h) to g.
func ONNXLayerNorm(g *onnxgraph.Builder, param func(string) []float32, x, name string, h int, eps float64) string {
	gamma := g.F32(name+".weight", param(name+".weight"), h)
	beta := g.F32(name+".bias", param(name+".bias"), h)
	return g.Op("LayerNormalization", []string{x, gamma, beta}, onnxgraph.AttrInt("axis", -1), onnxgraph.AttrFloat("epsilon", float32(eps)))
}

// ONNXActivation applies an HF hidden_act (as Activation maps it) to x in g; tag makes the
// names of its constants unique per use (name_tag).
func ONNXActivation(g *onnxgraph.Builder, act, x, tag string) string {
	c := func(name string, v float32) string { return g.ScalarF(name+"_"+tag, v) }
	switch act {
	case "relu":
		return g.Op("Relu", []string{x})
	case "tanh":
		return g.Op("Tanh", []string{x})
	case "gelu_new", "gelu_pytorch_tanh":
		// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
		x3 := g.Op("Mul", []string{g.Op("Mul", []string{x, x}), x})
		inner := g.Op("Mul", []string{g.Op("Add", []string{x, g.Op("Mul", []string{x3, c("gelu_c", 0.044715)})}), c("gelu_s", float32(math.Sqrt(2/math.Pi)))})
		t := g.Op("Add", []string{g.Op("Tanh", []string{inner}), c("gelu_one", 1)})
		return g.Op("Mul", []string{g.Op("Mul", []string{x, t}), c("gelu_half", 0.5)})
	}
	// 0.5 x (1 + erf(x / sqrt 2))
	e := g.Op("Erf", []string{g.Op("Div", []string{x, c("gelu_sqrt2", float32(math.Sqrt2))})})
	return g.Op("Mul", []string{g.Op("Mul", []string{x, g.Op("Add", []string{e, c("gelu_one", 1)})}), c("gelu_half", 0.5)})
}
