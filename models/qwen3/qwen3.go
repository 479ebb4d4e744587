package qwen3

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/toolret/toolret/models/hflayers"
	"github.com/toolret/toolret/models/pooling"
)

// spec is what the shared HF blocks need of cfg.
func spec(cfg *Config) hflayers.Spec {
	return hflayers.Spec{DType: cfg.dtype(), InitRange: cfg.InitializerRange}
}

// Encode runs Qwen3 over a batch: ids int32 [batch, seq], types ignored (Qwen3 has no token
// types), mask [batch, seq] with 1 for real tokens (any numeric dtype; nil: all real), left
// or right padding. It returns the last hidden states [batch, seq, hidden] (after the final
// RMSNorm, transformers' last_hidden_state).
func Encode(scope *model.Scope, cfg *Config, ids, types, mask *Node) *Node {
	return Layers(scope, cfg, Embed(scope, cfg, ids, types, mask), mask)
}

// Embed is the token embedding, [batch, seq, hidden]. A sequence longer than
// max_position_embeddings is refused (a panic, which model.Exec turns into an error).
func Embed(scope *model.Scope, cfg *Config, ids, _, _ *Node) *Node {
	if seq := ids.Shape().Dimensions[1]; seq > cfg.MaxPositionEmbeddings {
		exceptions.Panicf("qwen3: sequence length %d exceeds max_position_embeddings %d", seq, cfg.MaxPositionEmbeddings)
	}
	words := spec(cfg).Variable(scope.At("embed_tokens"), ids.Graph(), "weight", cfg.VocabSize, cfg.HiddenSize)
	return Gather(words, InsertAxes(ConvertDType(ids, dtypes.Int32), -1))
}

// Layers runs the decoder layers and the final RMSNorm over embedded inputs x [batch, seq,
// hidden] with mask [batch, seq] (1 for real positions; nil: all real): causal attention
// over the real tokens, positions 0..seq-1 (RoPE has no table: seq may exceed
// max_position_embeddings, as a model appending inputs after Embed needs).
func Layers(scope *model.Scope, cfg *Config, x, mask *Node) *Node {
	g := x.Graph()
	batch, seq := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	if mask == nil {
		mask = Ones(g, shapes.Make(dtypes.Float32, batch, seq))
	}
	dt := cfg.dtype()
	cos, sin := RoPETables(g, seq, cfg.HeadDim, cfg.Theta(), dt)
	addMask := AddMask(Allowed(mask, true, 0), dt)
	layers := scope.At("layers")
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		x = layer(layers.In("%d", l), cfg, x, addMask, cos, sin)
	}
	return RMSNormVar(spec(cfg), scope.At("norm"), x, cfg.RMSNormEps, false)
}

func layer(scope *model.Scope, cfg *Config, x, addMask, cos, sin *Node) *Node {
	sp := spec(cfg)
	dims := x.Shape().Dimensions
	batch, seq, hidden := dims[0], dims[1], dims[2]
	heads, kv, dh := cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim

	h := RMSNormVar(sp, scope.In("input_layernorm"), x, cfg.RMSNormEps, false)
	attn := scope.In("self_attn")
	q := Reshape(Linear(sp, attn.In("q_proj"), h, heads*dh, cfg.AttentionBias), batch, seq, heads, dh)
	k := Reshape(Linear(sp, attn.In("k_proj"), h, kv*dh, cfg.AttentionBias), batch, seq, kv, dh)
	v := Reshape(Linear(sp, attn.In("v_proj"), h, kv*dh, cfg.AttentionBias), batch, seq, kv, dh)
	q = RoPE(RMSNormVar(sp, attn.In("q_norm"), q, cfg.RMSNormEps, false), cos, sin)
	k = RoPE(RMSNormVar(sp, attn.In("k_norm"), k, cfg.RMSNormEps, false), cos, sin)
	a := Attention(attn, q, k, v, addMask, 1/math.Sqrt(float64(dh)))
	x = Add(x, Linear(sp, attn.In("o_proj"), a, hidden, cfg.AttentionBias))

	h = RMSNormVar(sp, scope.In("post_attention_layernorm"), x, cfg.RMSNormEps, false)
	mlp := scope.In("mlp")
	gate := Linear(sp, mlp.In("gate_proj"), h, cfg.IntermediateSize, false)
	up := Linear(sp, mlp.In("up_proj"), h, cfg.IntermediateSize, false)
	return Add(x, Linear(sp, mlp.In("down_proj"), Mul(Mul(gate, Sigmoid(gate)), up), hidden, false))
}

// Pool reduces hidden [batch, seq, hidden] to [batch, hidden] with p (pooling.None returns it
// unchanged). Qwen3-Embedding pools the last token (pooling.Last); Qwen3 has no pooler layer.
func Pool(hidden, mask *Node, p pooling.Pooling) *Node {
	return pooling.Pool(hidden, mask, p, nil)
}
