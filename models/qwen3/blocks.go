package qwen3

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/toolret/toolret/models/hflayers"
)

// Linear is an HF Linear under scope (weight [out, in], bias [out] when bias is true) of sp's
// dtype and initialisation; its product runs in scope's compute dtype
// (hflayers.ComputeParam: bf16 mixed precision), the bias in x's.
func Linear(sp hflayers.Spec, scope *model.Scope, x *Node, out int, bias bool) *Node {
	in := x.Shape().Dimensions[x.Rank()-1]
	w := sp.Variable(scope, x.Graph(), "weight", out, in)
	var b *Node
	if bias {
		b = sp.Variable(scope, x.Graph(), "bias", out)
	}
	return hflayers.ComputeDense(scope, x, w, b)
}

// RMSNorm normalises x over its last axis by its root mean square (eps added to the mean
// square) and scales it by w [last axis]: by w (Qwen3, Llama) or, with offset, by 1 + w
// (Gemma, whose weights are stored centred on 0). It divides by Sqrt rather than multiplying
// by Rsqrt: GoMLX defines no gradient for Rsqrt, and training goes through it.
func RMSNorm(x, w *Node, eps float64, offset bool) *Node {
	ms := ReduceAndKeep(Square(x), ReduceMean, -1)
	y := Div(x, Sqrt(AddScalar(ms, eps)))
	if offset {
		w = OnePlus(w)
	}
	dims := make([]int, x.Rank())
	for i := range dims {
		dims[i] = 1
	}
	dims[len(dims)-1] = w.Shape().Dimensions[0]
	return Mul(y, Reshape(w, dims...))
}

// RMSNormVar is RMSNorm with its weight, variable "weight" [dim] of scope (initialised to
// ones without offset and zeros with offset, as HF does).
func RMSNormVar(sp hflayers.Spec, scope *model.Scope, x *Node, eps float64, offset bool) *Node {
	dim := x.Shape().Dimensions[x.Rank()-1]
	var w *Node
	if offset {
		// HF's Gemma RMSNorm weight is centred on 0 (the norm scales by 1 + weight): zeros, not
		// the ones the Spec gives a 1-D "weight".
		w = scope.WithInitializer(initializer.Zero).VariableWithShape("weight", shapes.Make(sp.DType, dim)).NodeValue(x.Graph())
	} else {
		w = sp.Variable(scope, x.Graph(), "weight", dim)
	}
	return RMSNorm(x, w, eps, offset)
}

// InvFreq returns RoPE's inverse frequencies 1 / theta^(2i / dim), i < dim / 2, computed in
// float32 as transformers does.
func InvFreq(theta float64, dim int) []float32 {
	out := make([]float32, dim/2)
	for i := range out {
		e := float32(2*i) / float32(dim)
		out[i] = float32(1 / math.Pow(theta, float64(e)))
	}
	return out
}

// RoPETables returns the cos and sin tables [seq, dim] of positions 0..seq-1 (transformers'
// default rotary embedding: the frequencies repeated over both halves), in dtype dt.
func RoPETables(g *Graph, seq, dim int, theta float64, dt dtypes.DType) (cos, sin *Node) {
	pos := Iota(g, shapes.Make(dtypes.Float32, seq, 1), 0)
	inv := Const(g, [][]float32{InvFreq(theta, dim)}) // [1, dim/2]
	freqs := Mul(pos, inv)                            // [seq, dim/2]
	emb := Concatenate([]*Node{freqs, freqs}, -1)     // [seq, dim]
	return ConvertDType(Cos(emb), dt), ConvertDType(Sin(emb), dt)
}

// RoPE rotates x [batch, seq, heads, dim] by the tables of RoPETables: x cos + rotate_half(x)
// sin, rotate_half(x) = (-x2, x1) for the halves x1, x2 of the last axis.
func RoPE(x, cos, sin *Node) *Node {
	dims := x.Shape().Dimensions
	seq, dim := dims[1], dims[3]
	cos = Reshape(cos, 1, seq, 1, dim)
	sin = Reshape(sin, 1, seq, 1, dim)
	x1 := Slice(x, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, dim/2))
	x2 := Slice(x, AxisRange(), AxisRange(), AxisRange(), AxisRange(dim/2, dim))
	rot := Concatenate([]*Node{Neg(x2), x1}, -1)
	return Add(Mul(x, cos), Mul(rot, sin))
}

// Attention is grouped-query attention: q [batch, seq, heads, dim], k and v [batch, seq,
// kvHeads, dim] (heads a multiple of kvHeads; query head h uses key-value head h / (heads /
// kvHeads), as transformers' repeat_kv), scores scaled by scale plus addMask (broadcastable
// to [batch, 1, 1, seq, seq]: query, key), softmax over the keys. It returns [batch, seq,
// heads * dim]. The two products run in scope's compute dtype (hflayers.ComputeParam), the
// mask and softmax in q's.
func Attention(scope *model.Scope, q, k, v, addMask *Node, scale float64) *Node {
	dims := q.Shape().Dimensions
	batch, seq, heads, dim := dims[0], dims[1], dims[2], dims[3]
	kv := k.Shape().Dimensions[2]
	q = Reshape(q, batch, seq, kv, heads/kv, dim)
	s := MulScalar(hflayers.ComputeEinsum(scope, "bqngd,bknd->bngqk", q, k), scale) // [batch, kv, group, seq, seq]
	p := Softmax(Add(s, addMask), -1)
	ctx := hflayers.ComputeEinsum(scope, "bngqk,bknd->bqngd", p, v)
	return Reshape(ctx, batch, seq, heads*dim)
}

// AddMask turns allowed [batch, seq, seq] (query, key; true where the query may attend to
// the key) into the additive mask Attention takes: 0 where allowed, the dtype's lowest value
// (transformers' finfo.min) elsewhere, [batch, 1, 1, seq, seq].
func AddMask(allowed *Node, dt dtypes.DType) *Node {
	g := allowed.Graph()
	m := Where(allowed, ScalarZero(g, dt), Scalar(g, dt, hflayers.Lowest(dt)))
	d := allowed.Shape().Dimensions
	return Reshape(m, d[0], 1, 1, d[1], d[2])
}

// Allowed returns [batch, seq, seq] (query, key): the key is a real token (mask [batch, seq]
// non-zero) and, when causal, not after the query; with window > 0 also |query - key| <
// window (bidirectional) or query - key < window (causal).
func Allowed(mask *Node, causal bool, window int) *Node {
	g := mask.Graph()
	d := mask.Shape().Dimensions
	batch, seq := d[0], d[1]
	real := NotEqual(mask, ScalarZero(g, mask.DType()))
	ok := BroadcastToDims(Reshape(real, batch, 1, seq), batch, seq, seq)
	qi := Iota(g, shapes.Make(dtypes.Int32, seq, seq), 0)
	ki := Iota(g, shapes.Make(dtypes.Int32, seq, seq), 1)
	var pat *Node
	if causal {
		pat = LessOrEqual(ki, qi)
	}
	if window > 0 {
		diff := Sub(qi, ki)
		if !causal {
			diff = Abs(diff)
		}
		w := LessThan(diff, Scalar(g, dtypes.Int32, window))
		if pat == nil {
			pat = w
		} else {
			pat = LogicalAnd(pat, w)
		}
	}
	if pat == nil {
		return ok
	}
	return LogicalAnd(ok, BroadcastToDims(Reshape(pat, 1, seq, seq), batch, seq, seq))
}
