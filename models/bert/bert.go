package bert

import (
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/toolret/toolret/models/hflayers"
	"github.com/toolret/toolret/models/pooling"
)

// Pooling names how token states become one vector per text (see package pooling).
type Pooling = pooling.Pooling

// Poolings.
const (
	PoolCLS    = pooling.CLS    // the [CLS] token's final hidden state
	PoolMean   = pooling.Mean   // mean over real (unpadded) tokens
	PoolPooler = pooling.Pooler // dense + tanh over [CLS] (BERT's pooler)
	PoolNone   = pooling.None   // no pooling: all token states
)

// spec is what the shared HF blocks need of cfg.
func spec(cfg *Config) hflayers.Spec {
	return hflayers.Spec{DType: cfg.dtype(), InitRange: cfg.InitializerRange, LayerNormEps: cfg.LayerNormEps}
}

func variable(scope *model.Scope, cfg *Config, g *Graph, name string, dims ...int) *Node {
	return spec(cfg).Variable(scope, g, name, dims...)
}

func dense(scope *model.Scope, cfg *Config, x *Node, out int, act ...activation.Type) *Node {
	return spec(cfg).Dense(scope, x, out, act...)
}

func layerNorm(scope *model.Scope, cfg *Config, x *Node) *Node { return spec(cfg).LayerNorm(scope, x) }

func dropout(scope *model.Scope, x *Node, rate float64) *Node {
	return hflayers.Dropout(scope, x, rate)
}

// Encode runs BERT over a batch: ids and types are int32 [batch, seq] (types may be nil for
// all zeros), mask is [batch, seq] with 1 for real tokens and 0 for padding (any numeric
// dtype). It returns the last hidden state [batch, seq, hidden] in cfg.DType (float32 by
// default). Padding never changes the states of real tokens. Dropout is active only when the
// scope is training. Graph-building errors panic, as GoMLX graph functions do: Runner and
// model.Exec turn them into errors.
func Encode(scope *model.Scope, cfg *Config, ids, types, mask *Node) *Node {
	return Layers(scope, cfg, Embed(scope, cfg, ids, types), mask)
}

// Embed is the embedding layer of Encode: word + absolute position + token type embeddings,
// LayerNorm and dropout, [batch, seq, hidden]. Models that append their own inputs after the
// embedding layer (models/refiner) call Embed, concatenate, then Layers.
func Embed(scope *model.Scope, cfg *Config, ids, types *Node) *Node {
	g := ids.Graph()
	seq := ids.Shape().Dimensions[1]
	if seq > cfg.MaxPositionEmbeddings {
		exceptions.Panicf("bert: sequence length %d exceeds max_position_embeddings %d", seq, cfg.MaxPositionEmbeddings)
	}
	// At scopes: encoding twice in one graph (query and tool towers) reuses the weights.
	emb := scope.At("embeddings")
	words := variable(emb.In("word_embeddings"), cfg, g, "weight", cfg.VocabSize, cfg.HiddenSize)
	positions := variable(emb.In("position_embeddings"), cfg, g, "weight", cfg.MaxPositionEmbeddings, cfg.HiddenSize)
	typeEmb := variable(emb.In("token_type_embeddings"), cfg, g, "weight", cfg.TypeVocabSize, cfg.HiddenSize)

	x := Gather(words, InsertAxes(ConvertDType(ids, dtypes.Int32), -1)) // [B, S, H]
	pos := Slice(positions, AxisRange(0, seq))                          // [S, H]
	x = Add(x, InsertAxes(pos, 0))
	if types == nil {
		x = Add(x, InsertAxes(Slice(typeEmb, AxisRange(0, 1)), 0))
	} else {
		x = Add(x, Gather(typeEmb, InsertAxes(ConvertDType(types, dtypes.Int32), -1)))
	}
	x = layerNorm(emb.In("LayerNorm"), cfg, x)
	return dropout(scope, x, cfg.HiddenDropoutProb)
}

// Layers runs the transformer layers of Encode over embedded inputs x [batch, seq, hidden]
// (Embed's output, possibly extended) with mask [batch, seq] (1 for real positions).
func Layers(scope *model.Scope, cfg *Config, x, mask *Node) *Node {
	batch, seq := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	// Additive attention mask as in HF: (1 - mask) * finfo(dtype).min, broadcast to
	// [B, S(query), S(key)], the shape the go backend's fused attention accepts.
	dt := cfg.dtype()
	addMask := MulScalar(OneMinus(ConvertDType(mask, dt)), hflayers.Lowest(dt))
	addMask = BroadcastToDims(Reshape(addMask, batch, 1, seq), batch, seq, seq)

	enc := scope.At("encoder").In("layer")
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		x = layer(enc.In("%d", l), cfg, x, addMask)
	}
	return x
}

func layer(scope *model.Scope, cfg *Config, x, addMask *Node) *Node {
	dims := x.Shape().Dimensions
	batch, seq, hidden := dims[0], dims[1], dims[2]
	heads := cfg.NumAttentionHeads
	dh := hidden / heads

	attn := scope.In("attention")
	self := attn.In("self")
	q := Reshape(dense(self.In("query"), cfg, x, hidden), batch, seq, heads, dh)
	k := Reshape(dense(self.In("key"), cfg, x, hidden), batch, seq, heads, dh)
	v := Reshape(dense(self.In("value"), cfg, x, hidden), batch, seq, heads, dh)
	ctx := Reshape(hflayers.Attention(scope, q, k, v, addMask, cfg.AttentionProbsDropoutProb), batch, seq, hidden)

	out := attn.In("output")
	a := dense(out.In("dense"), cfg, ctx, hidden)
	a = dropout(scope, a, cfg.HiddenDropoutProb)
	x = layerNorm(out.In("LayerNorm"), cfg, Add(a, x))

	inter := dense(scope.In("intermediate").In("dense"), cfg, x, cfg.IntermediateSize, hflayers.Activation(cfg.HiddenAct))
	output := scope.In("output")
	o := dense(output.In("dense"), cfg, inter, hidden)
	o = dropout(scope, o, cfg.HiddenDropoutProb)
	return layerNorm(output.In("LayerNorm"), cfg, Add(o, x))
}

// Pool reduces hidden [batch, seq, hidden] to [batch, hidden] (or returns hidden unchanged
// for PoolNone). mask is [batch, seq] with 1 for real tokens.
func Pool(scope *model.Scope, cfg *Config, hidden, mask *Node, p Pooling) *Node {
	return pooling.Pool(hidden, mask, p, func(cls *Node) *Node {
		return Tanh(dense(scope.At("pooler").In("dense"), cfg, cls, cfg.HiddenSize))
	})
}
