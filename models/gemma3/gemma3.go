package gemma3

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/toolret/toolret/models/hflayers"
	"github.com/toolret/toolret/models/pooling"
	"github.com/toolret/toolret/models/qwen3"
)

// spec is what the shared HF blocks need of cfg.
func spec(cfg *Config) hflayers.Spec {
	return hflayers.Spec{DType: cfg.dtype(), InitRange: cfg.InitializerRange}
}

// Encode runs the Gemma3 text model over a batch: ids int32 [batch, seq], types ignored
// (Gemma3 has no token types), mask [batch, seq] with 1 for real tokens (any numeric dtype;
// nil: all real). It returns the last hidden states [batch, seq, hidden] (after the final
// RMSNorm, transformers' last_hidden_state).
func Encode(scope *model.Scope, cfg *Config, ids, types, mask *Node) *Node {
	return Layers(scope, cfg, Embed(scope, cfg, ids, types, mask), mask)
}

// Embed is the token embedding times sqrt(hidden_size) (the factor rounded to the weights'
// dtype, as Gemma3TextScaledWordEmbedding does), [batch, seq, hidden]. A sequence longer
// than max_position_embeddings is refused (a panic, which model.Exec turns into an error).
func Embed(scope *model.Scope, cfg *Config, ids, _, _ *Node) *Node {
	g := ids.Graph()
	if seq := ids.Shape().Dimensions[1]; seq > cfg.MaxPositionEmbeddings {
		exceptions.Panicf("gemma3: sequence length %d exceeds max_position_embeddings %d", seq, cfg.MaxPositionEmbeddings)
	}
	words := spec(cfg).Variable(scope.At("embed_tokens"), g, "weight", cfg.VocabSize, cfg.HiddenSize)
	x := Gather(words, InsertAxes(ConvertDType(ids, dtypes.Int32), -1))
	scale := math.Sqrt(float64(cfg.HiddenSize))
	if cfg.dtype() == dtypes.Float32 {
		scale = float64(float32(scale))
	}
	return MulScalar(x, scale)
}

// Layers runs the decoder layers and the final RMSNorm over embedded inputs x [batch, seq,
// hidden] with mask [batch, seq] (1 for real positions; nil: all real), positions
// 0..seq-1 (seq may exceed max_position_embeddings: RoPE has no table).
func Layers(scope *model.Scope, cfg *Config, x, mask *Node) *Node {
	g := x.Graph()
	batch, seq := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	if mask == nil {
		mask = Ones(g, shapes.Make(dtypes.Float32, batch, seq))
	}
	dt := cfg.dtype()
	causal := !cfg.UseBidirectionalAttention
	type perType struct{ mask, cos, sin *Node }
	byType := map[string]perType{}
	layers := scope.At("layers")
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		t := cfg.LayerType(l)
		pt, ok := byType[t]
		if !ok {
			window := 0
			if t == SlidingAttention {
				window = cfg.Window()
			}
			pt.mask = qwen3.AddMask(qwen3.Allowed(mask, causal, window), dt)
			pt.cos, pt.sin = qwen3.RoPETables(g, seq, cfg.HeadDim, cfg.ropeTheta(t), dt)
			byType[t] = pt
		}
		x = layer(layers.In("%d", l), cfg, x, pt.mask, pt.cos, pt.sin)
	}
	return norm(cfg, scope.At("norm"), x)
}

func norm(cfg *Config, scope *model.Scope, x *Node) *Node {
	return qwen3.RMSNormVar(spec(cfg), scope, x, cfg.RMSNormEps, true)
}

func layer(scope *model.Scope, cfg *Config, x, addMask, cos, sin *Node) *Node {
	sp := spec(cfg)
	dims := x.Shape().Dimensions
	batch, seq, hidden := dims[0], dims[1], dims[2]
	heads, kv, dh := cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim

	h := norm(cfg, scope.In("input_layernorm"), x)
	attn := scope.In("self_attn")
	q := Reshape(qwen3.Linear(sp, attn.In("q_proj"), h, heads*dh, cfg.AttentionBias), batch, seq, heads, dh)
	k := Reshape(qwen3.Linear(sp, attn.In("k_proj"), h, kv*dh, cfg.AttentionBias), batch, seq, kv, dh)
	v := Reshape(qwen3.Linear(sp, attn.In("v_proj"), h, kv*dh, cfg.AttentionBias), batch, seq, kv, dh)
	q = qwen3.RoPE(norm(cfg, attn.In("q_norm"), q), cos, sin)
	k = qwen3.RoPE(norm(cfg, attn.In("k_norm"), k), cos, sin)
	// No soft-capping: transformers' Gemma3Attention keeps attn_logit_softcapping but does not
	// pass it to the attention function (see Config.AttnLogitSoftcapping).
	a := qwen3.Attention(attn, q, k, v, addMask, 1/math.Sqrt(cfg.QueryPreAttnScalar))
	a = qwen3.Linear(sp, attn.In("o_proj"), a, hidden, cfg.AttentionBias)
	x = Add(x, norm(cfg, scope.In("post_attention_layernorm"), a))

	h = norm(cfg, scope.In("pre_feedforward_layernorm"), x)
	mlp := scope.In("mlp")
	gate := qwen3.Linear(sp, mlp.In("gate_proj"), h, cfg.IntermediateSize, false)
	up := qwen3.Linear(sp, mlp.In("up_proj"), h, cfg.IntermediateSize, false)
	m := qwen3.Linear(sp, mlp.In("down_proj"), Mul(geluTanh(gate), up), hidden, false)
	return Add(x, norm(cfg, scope.In("post_feedforward_layernorm"), m))
}

// geluTanh is torch's gelu(approximate="tanh"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
func geluTanh(x *Node) *Node {
	inner := MulScalar(Add(x, MulScalar(Mul(Square(x), x), 0.044715)), math.Sqrt(2/math.Pi))
	return Mul(MulScalar(x, 0.5), OnePlus(Tanh(inner)))
}

// Pool reduces hidden [batch, seq, hidden] to [batch, hidden] with p (pooling.None returns it
// unchanged), then applies the sentence-transformers Dense modules of cfg in order (parameters
// "st_dense.<i>.linear.*" under scope). Gemma3 has no pooler layer.
func Pool(scope *model.Scope, cfg *Config, hidden, mask *Node, p pooling.Pooling) *Node {
	x := pooling.Pool(hidden, mask, p, nil)
	if p == pooling.None {
		return x
	}
	ds := scope.At(DensePrefix)
	for i, d := range cfg.Dense {
		x = qwen3.Linear(spec(cfg), ds.In("%d", i).In("linear"), x, d.Out, d.Bias)
	}
	return x
}
