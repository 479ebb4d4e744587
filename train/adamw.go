package train

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/toolret/toolret/checkpoints"
)

// Optimizer configures AdamW and the learning-rate schedule.
type Optimizer struct {
	LR          float64 `json:"lr"`
	Beta1       float64 `json:"beta1"`
	Beta2       float64 `json:"beta2"`
	Eps         float64 `json:"eps"`
	WeightDecay float64 `json:"weight_decay"`
	// DecayAll applies weight decay to biases and LayerNorm parameters too (default: not).
	DecayAll bool `json:"decay_all"`
	// ClipNorm clips the global gradient norm (0 = no clipping).
	ClipNorm float64 `json:"clip_norm"`
	// Warmup steps of linear increase, then Schedule ("linear" or "cosine" to 0 at TotalSteps,
	// or "constant").
	Warmup     int    `json:"warmup"`
	TotalSteps int    `json:"total_steps"`
	Schedule   string `json:"schedule"`
	// Accumulate averages the gradients of this many micro-batches per optimizer step (>= 1).
	Accumulate int `json:"accumulate"`
	// Rules give some variables a peak learning rate of their own (the first rule whose
	// prefix a variable's path has); the others take LR. The schedule keeps its shape.
	Rules []LRRule `json:"lr_rules,omitempty"`
}

// LRRule gives the trainable variables whose path starts with Prefix the peak learning rate
// LR instead of the optimizer's: a differential learning rate, e.g. a new head above a
// pre-trained encoder trained faster than the encoder (as sentence-transformers'
// learning_rate_mapping or a torch parameter group does). Weight decay scales with it.
type LRRule struct {
	Prefix string  `json:"prefix"`
	LR     float64 `json:"lr"`
}

// lrScale returns the factor of the peak learning rate of the variable at path: the first
// matching rule's LR over o.LR, else 1.
func (o Optimizer) lrScale(path string) float64 {
	for _, r := range o.Rules {
		if strings.HasPrefix(path, r.Prefix) {
			return r.LR / o.LR
		}
	}
	return 1
}

// DefaultOptimizer has the usual fine-tuning values of sentence-transformers.
func DefaultOptimizer() Optimizer {
	return Optimizer{LR: 2e-5, Beta1: 0.9, Beta2: 0.999, Eps: 1e-6, WeightDecay: 0.01, ClipNorm: 1, Schedule: "linear", Accumulate: 1}
}

// Validate checks the configuration.
func (o Optimizer) Validate() error {
	switch {
	case o.LR <= 0 || math.IsNaN(o.LR):
		return fmt.Errorf("optimizer: lr %v must be > 0", o.LR)
	case o.Beta1 < 0 || o.Beta1 >= 1 || o.Beta2 < 0 || o.Beta2 >= 1:
		return fmt.Errorf("optimizer: betas (%v, %v) must be in [0, 1)", o.Beta1, o.Beta2)
	case o.Eps <= 0:
		return fmt.Errorf("optimizer: eps %v must be > 0", o.Eps)
	case o.WeightDecay < 0 || o.ClipNorm < 0 || o.Warmup < 0:
		return fmt.Errorf("optimizer: weight decay, clip norm and warmup must be >= 0")
	case o.Accumulate < 1:
		return fmt.Errorf("optimizer: accumulate %d must be >= 1", o.Accumulate)
	case o.Schedule != "linear" && o.Schedule != "cosine" && o.Schedule != "constant":
		return fmt.Errorf("optimizer: schedule %q: want linear, cosine or constant", o.Schedule)
	case o.badRule() != "":
		return fmt.Errorf("optimizer: %s", o.badRule())
	case o.Schedule != "constant" && o.TotalSteps <= o.Warmup:
		return fmt.Errorf("optimizer: total steps %d must exceed warmup %d for a %s schedule", o.TotalSteps, o.Warmup, o.Schedule)
	}
	return nil
}

// badRule describes the first invalid rule ("" if none).
func (o Optimizer) badRule() string {
	for i, r := range o.Rules {
		if r.Prefix == "" {
			return fmt.Sprintf("lr rule %d: empty prefix", i)
		}
		if r.LR <= 0 || math.IsNaN(r.LR) || math.IsInf(r.LR, 0) {
			return fmt.Sprintf("lr rule %d (%s): lr %v must be > 0", i, r.Prefix, r.LR)
		}
	}
	return ""
}

// LRAt returns the learning rate of optimizer update t (1-based).
func (o Optimizer) LRAt(t int) float64 {
	if o.Warmup > 0 && t <= o.Warmup {
		return o.LR * float64(t) / float64(o.Warmup)
	}
	if o.Schedule == "constant" {
		return o.LR
	}
	frac := float64(t-o.Warmup) / float64(o.TotalSteps-o.Warmup)
	if frac >= 1 {
		return 0
	}
	if o.Schedule == "cosine" {
		return o.LR * 0.5 * (1 + math.Cos(math.Pi*frac))
	}
	return o.LR * (1 - frac)
}

// lrGraph computes LRAt(t) in the graph for an int64 scalar t.
func (o Optimizer) lrGraph(t *Node) *Node {
	tf := ConvertDType(t, dtypes.Float64)
	lr := Scalar(t.Graph(), dtypes.Float64, o.LR)
	var decayed *Node
	switch o.Schedule {
	case "constant":
		decayed = lr
	default:
		frac := DivScalar(AddScalar(tf, -float64(o.Warmup)), float64(o.TotalSteps-o.Warmup))
		frac = Min(Max(frac, ScalarZero(t.Graph(), dtypes.Float64)), ScalarOne(t.Graph(), dtypes.Float64))
		if o.Schedule == "cosine" {
			decayed = Mul(lr, MulScalar(OnePlus(Cos(MulScalar(frac, math.Pi))), 0.5))
		} else {
			decayed = Mul(lr, OneMinus(frac))
		}
	}
	if o.Warmup > 0 {
		warm := Mul(lr, DivScalar(tf, float64(o.Warmup)))
		decayed = Where(LessOrEqual(tf, Scalar(t.Graph(), dtypes.Float64, float64(o.Warmup))), warm, decayed)
	}
	return decayed
}

// NoDecay reports whether a variable is excluded from weight decay: biases and LayerNorm
// parameters (by name), and any rank-1 parameter.
func NoDecay(path string, shape shapes.Shape) bool {
	low := strings.ToLower(path)
	return shape.Rank() <= 1 || strings.HasSuffix(low, "/bias") || strings.Contains(low, "layernorm") || strings.Contains(low, "layer_norm")
}

// OptimizerScope holds the optimizer's state (Adam's moments, step counts, gradient
// accumulators); it is part of every checkpoint and read by no inference graph.
const OptimizerScope = checkpoints.OptimizerScope

const optScope = OptimizerScope

// StepVar is the path of the int64 count of micro-batches seen.
const StepVar = optScope + "/micro_step"

// Update adds the AdamW update of all trainable variables used by loss's graph, and
// returns the learning rate used (0 on accumulation-only micro-steps) and the global
// gradient norm before clipping.
//
// The graph must be marked as training (scope.SetTraining(g, true)) before any variable is
// read: otherwise backends that prefer constants for variables (GoMLX's go and onnx) embed
// the current values as constants and updates are lost. Update panics if it is not.
func (o Optimizer) Update(scope *model.Scope, loss *Node) (lr, gradNorm *Node) {
	g := loss.Graph()
	store := scope.Store()
	vars, values := trainable(store, g)
	if len(vars) == 0 {
		panic(fmt.Errorf("optimizer: no trainable variables in the loss graph"))
	}
	grads := Gradient(ConvertDType(loss, dtypes.Float32), values...)
	apply, t := o.count(store, g)
	// Accumulate, then average.
	if o.Accumulate > 1 {
		for i, v := range vars {
			av := stateVar(store, "acc", v)
			sum := Add(av.NodeValue(g), grads[i])
			av.SetNodeValue(Where(apply, ZerosLike(sum), sum))
			grads[i] = DivScalar(sum, float64(o.Accumulate))
		}
	}
	return o.adam(store, g, vars, values, grads, apply, t, o.Accumulate > 1)
}

// trainable returns the trainable variables g uses (the optimizer's own state excepted) and
// their values in g, sorted by path. The graph must be marked as training (see Update).
func trainable(store *model.Store, g *Graph) ([]*model.Variable, []*Node) {
	if !store.IsTraining(g) {
		panic(fmt.Errorf("optimizer: graph is not marked as training (call scope.SetTraining(g, true) before reading variables)"))
	}
	var vars []*model.Variable
	for v := range store.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) && !strings.HasPrefix(v.Path(), optScope+"/") {
			vars = append(vars, v)
		}
	}
	// A fixed order (by path), not the store's creation order: a store restored from a
	// checkpoint creates its variables in another order, and the global gradient norm summed
	// in another order rounds differently, which would break bit-identical resume.
	sort.Slice(vars, func(a, b int) bool { return vars[a].Path() < vars[b].Path() })
	values := make([]*Node, len(vars))
	for i, v := range vars {
		values[i] = v.NodeValue(g)
	}
	return vars, values
}

// stateVar is the optimizer's state of kind for variable v.
func stateVar(store *model.Store, kind string, v *model.Variable) *model.Variable {
	sv := store.VariableWithShape(optScope+"/"+kind+v.Path(), v.Shape(), initializer.Zero)
	sv.Trainable = false
	return sv
}

// count counts one micro-batch: apply says it completes an optimizer step (every
// Accumulate-th), t is that step's number (1-based when apply).
func (o Optimizer) count(store *model.Store, g *Graph) (apply, t *Node) {
	stepV := store.VariableWithShape(StepVar, shapes.Make(dtypes.Int64), initializer.Zero)
	stepV.Trainable = false
	micro := AddScalar(stepV.NodeValue(g), 1)
	stepV.SetNodeValue(micro)
	acc := int64(o.Accumulate)
	apply = Equal(ModScalar(micro, float64(acc)), ScalarZero(g, dtypes.Int64))
	t = Div(micro, Scalar(g, dtypes.Int64, acc)) // optimizer update number (1-based when apply)
	return apply, t
}

// adam clips grads by their global norm and applies the AdamW update of step t to vars
// (values: their values in g); with gated, only where apply holds.
func (o Optimizer) adam(store *model.Store, g *Graph, vars []*model.Variable, values, grads []*Node, apply, t *Node, gated bool) (lr, gradNorm *Node) {
	// Global norm and clipping.
	var sq *Node
	for _, gr := range grads {
		s := ReduceAllSum(Square(gr))
		if sq == nil {
			sq = s
		} else {
			sq = Add(sq, s)
		}
	}
	gradNorm = Sqrt(sq)
	if o.ClipNorm > 0 {
		scale := Min(ScalarOne(g, dtypes.Float32), Div(Scalar(g, dtypes.Float32, o.ClipNorm), AddScalar(gradNorm, 1e-6)))
		for i := range grads {
			grads[i] = Mul(grads[i], scale)
		}
	}
	lr64 := o.lrGraph(t)
	lrF := ConvertDType(lr64, dtypes.Float32)
	tf := ConvertDType(t, dtypes.Float64)
	bc1 := ConvertDType(OneMinus(Pow(Scalar(g, dtypes.Float64, o.Beta1), tf)), dtypes.Float32)
	bc2 := ConvertDType(OneMinus(Pow(Scalar(g, dtypes.Float64, o.Beta2), tf)), dtypes.Float32)
	for i, v := range vars {
		mv, vv := stateVar(store, "m", v), stateVar(store, "v", v)
		m0, v0 := mv.NodeValue(g), vv.NodeValue(g)
		m1 := Add(MulScalar(m0, o.Beta1), MulScalar(grads[i], 1-o.Beta1))
		v1 := Add(MulScalar(v0, o.Beta2), MulScalar(Square(grads[i]), 1-o.Beta2))
		p0 := values[i]
		p1 := p0
		lrV := lrF
		if s := o.lrScale(v.Path()); s != 1 {
			lrV = MulScalar(lrF, s)
		}
		if o.WeightDecay > 0 && (o.DecayAll || !NoDecay(v.Path(), v.Shape())) {
			p1 = Sub(p1, Mul(p0, MulScalar(lrV, o.WeightDecay)))
		}
		stepDir := Div(Div(m1, bc1), AddScalar(Sqrt(Div(v1, bc2)), o.Eps))
		p1 = Sub(p1, Mul(lrV, stepDir))
		if gated {
			m1, v1, p1 = Where(apply, m1, m0), Where(apply, v1, v0), Where(apply, p1, p0)
		}
		mv.SetNodeValue(m1)
		vv.SetNodeValue(v1)
		v.SetNodeValue(p1)
	}
	lr = Where(apply, lrF, ZerosLike(lrF))
	return lr, gradNorm
}

// accumulate adds the gradient of loss with respect to the trainable variables its graph
// uses to their accumulators (the "acc" state Update keeps with Accumulate > 1) and returns
// those variables' paths, without counting a micro-batch or updating anything else: one
// part of a batch whose gradient is a sum over parts (GradCache, cacheStep).
func accumulate(scope *model.Scope, loss *Node) []string {
	g := loss.Graph()
	store := scope.Store()
	vars, values := trainable(store, g)
	if len(vars) == 0 {
		return nil
	}
	grads := Gradient(ConvertDType(loss, dtypes.Float32), values...)
	paths := make([]string, len(vars))
	for i, v := range vars {
		av := stateVar(store, "acc", v)
		av.SetNodeValue(Add(av.NodeValue(g), grads[i]))
		paths[i] = v.Path()
	}
	return paths
}

// applyAccumulated counts one micro-batch whose gradient the accumulators of vars hold (see
// accumulate) and, every Accumulate-th, applies their average as Update does and zeroes them.
func (o Optimizer) applyAccumulated(scope *model.Scope, g *Graph, vars []*model.Variable) (lr, gradNorm *Node) {
	store := scope.Store()
	if !store.IsTraining(g) {
		panic(fmt.Errorf("optimizer: graph is not marked as training"))
	}
	values := make([]*Node, len(vars))
	grads := make([]*Node, len(vars))
	apply, t := o.count(store, g)
	for i, v := range vars {
		values[i] = v.NodeValue(g)
		av := stateVar(store, "acc", v)
		sum := av.NodeValue(g)
		av.SetNodeValue(Where(apply, ZerosLike(sum), sum))
		grads[i] = DivScalar(sum, float64(max(o.Accumulate, 1)))
	}
	return o.adam(store, g, vars, values, grads, apply, t, true)
}
