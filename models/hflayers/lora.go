package hflayers

import (
	"fmt"
	"math"
	"slices"
	"strings"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
)

// LoRA is a low-rank adaptation (Hu et al. 2021) of an encoder's Linear layers, as PEFT's
// LoraConfig defines it: each target Linear y = x·Wᵀ + b becomes
//
//	y = x·Wᵀ + b + (Alpha/Rank) · dropout(x)·Aᵀ·Bᵀ
//
// with A [Rank, in] initialised uniform in ±1/sqrt(in) (PEFT's kaiming_uniform_ with a =
// sqrt(5)) and B [out, Rank] zeros, so that training starts from the base model. The adapter
// variables are "weight" in the scopes lora_A and lora_B under the Linear's scope: HF name
// "<linear>.lora_A.weight", the name PEFT's adapter_model.safetensors gives them after its
// "base_model.model." prefix. The json names are PEFT's adapter_config.json ones.
type LoRA struct {
	Rank    int      `json:"r"`
	Alpha   float64  `json:"lora_alpha"`
	Dropout float64  `json:"lora_dropout"`
	Targets []string `json:"target_modules"`
}

// LoRAParam is the graph parameter (model.Scope.SetGraphParam, a *LoRA) that turns LoRA on
// for the Dense layers at and below the scope it is set in.
const LoRAParam = "hflayers_lora"

// Scale is Alpha/Rank, the factor of the low-rank update.
func (l LoRA) Scale() float64 { return l.Alpha / float64(l.Rank) }

// Validate checks l against the Linear module names an encoder can adapt (valid, as PEFT
// names them: "query", "key", "value", "dense" for BERT).
func (l LoRA) Validate(valid []string) error {
	if l.Rank <= 0 {
		return fmt.Errorf("lora: rank %d: must be > 0", l.Rank)
	}
	if !(l.Alpha > 0) || math.IsInf(l.Alpha, 0) {
		return fmt.Errorf("lora: alpha %v: must be > 0", l.Alpha)
	}
	if !(l.Dropout >= 0 && l.Dropout < 1) {
		return fmt.Errorf("lora: dropout %v: a probability, must be in [0, 1)", l.Dropout)
	}
	if len(l.Targets) == 0 {
		return fmt.Errorf("lora: no target modules (valid: %s)", strings.Join(valid, ", "))
	}
	seen := map[string]bool{}
	for _, t := range l.Targets {
		if !slices.Contains(valid, t) {
			return fmt.Errorf("lora: unknown target module %q (valid: %s)", t, strings.Join(valid, ", "))
		}
		if seen[t] {
			return fmt.Errorf("lora: target module %q given twice", t)
		}
		seen[t] = true
	}
	return nil
}

// Target reports whether l adapts the Linear layer named by its HF name or scope path
// (its last component is the module name PEFT's target_modules match).
func (l LoRA) Target(name string) bool {
	i := strings.LastIndexAny(name, "./")
	return slices.Contains(l.Targets, name[i+1:])
}

// IsLoRAVariable reports whether the variable path (or HF parameter name) is an adapter
// weight.
func IsLoRAVariable(path string) bool {
	return strings.Contains(path, "lora_A") || strings.Contains(path, "lora_B")
}

// loraOf returns the LoRA set for scope's Linear in graph g, or nil.
func loraOf(scope *model.Scope, g *Graph) *LoRA {
	v, ok := scope.GetGraphParam(g, LoRAParam)
	if !ok || v == nil {
		return nil
	}
	l, _ := v.(*LoRA)
	if l == nil || !l.Target(scope.Scope()) {
		return nil
	}
	return l
}

// loraDense is Dense with the LoRA update of l added before the activation.
func (s Spec) loraDense(scope *model.Scope, l *LoRA, x *Node, out int, act ...activation.Type) *Node {
	g := x.Graph()
	in := x.Shape().Dimensions[x.Rank()-1]
	w := s.Variable(scope, g, "weight", out, in)
	b := s.Variable(scope, g, "bias", out)
	y := linear(scope, x, w, b)
	bound := 1 / math.Sqrt(float64(in))
	a := scope.In("lora_A").WithInitializer(initializer.RandomUniformFn(scope, -bound, bound)).
		VariableWithShape("weight", shapeOf(s, l.Rank, in)).NodeValue(g)
	bm := scope.In("lora_B").WithInitializer(initializer.Zero).VariableWithShape("weight", shapeOf(s, out, l.Rank)).NodeValue(g)
	h := Dropout(scope, x, l.Dropout)
	h = linear(scope, h, a, nil)
	h = linear(scope, h, bm, nil)
	y = Add(y, MulScalar(h, l.Scale()))
	if len(act) > 0 {
		y = activation.Apply(act[0], y)
	}
	return y
}

// MergeLoRA returns w + scale·B·A (w [out, in], b [out, r], a [r, in], row-major), the
// Linear weight a merged adapter leaves; the products are summed in float64.
func MergeLoRA(w, b, a []float32, out, in, r int, scale float64) ([]float32, error) {
	if len(w) != out*in || len(b) != out*r || len(a) != r*in {
		return nil, fmt.Errorf("lora: merge: shapes: weight %d (want %d×%d), lora_B %d (want %d×%d), lora_A %d (want %d×%d)",
			len(w), out, in, len(b), out, r, len(a), r, in)
	}
	m := make([]float32, len(w))
	for o := 0; o < out; o++ {
		for i := 0; i < in; i++ {
			var d float64
			for k := 0; k < r; k++ {
				d += float64(b[o*r+k]) * float64(a[k*in+i])
			}
			m[o*in+i] = float32(float64(w[o*in+i]) + scale*d)
		}
	}
	return m, nil
}
