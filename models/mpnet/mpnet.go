package mpnet

import (
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/toolret/toolret/models/pooling"
)

// variable returns the variable name in scope, created with the given shape and HF's
// _init_weights initialisation when no checkpoint or Init created it first.
func variable(scope *model.Scope, cfg *Config, g *Graph, name string, dims ...int) *Node {
	var init model.VariableInitializer
	switch {
	case name == "bias":
		init = initializer.Zero
	case name == "weight" && len(dims) == 1:
		init = initializer.One
	default:
		init = initializer.RandomNormalFn(scope, cfg.InitializerRange)
	}
	return scope.WithInitializer(init).VariableWithShape(name, shapes.Make(cfg.dtype(), dims...)).NodeValue(g)
}

// dense is an HF Linear (weight [out, in]) with an optional fused activation.
func dense(scope *model.Scope, cfg *Config, x *Node, out int, act ...activation.Type) *Node {
	in := x.Shape().Dimensions[x.Rank()-1]
	w := variable(scope, cfg, x.Graph(), "weight", out, in)
	b := variable(scope, cfg, x.Graph(), "bias", out)
	return nn.Dense(x, w, b, compute.DenseLayoutOutputsInput, act...)
}

func layerNorm(scope *model.Scope, cfg *Config, x *Node) *Node {
	h := x.Shape().Dimensions[x.Rank()-1]
	gamma := variable(scope, cfg, x.Graph(), "weight", h)
	beta := variable(scope, cfg, x.Graph(), "bias", h)
	return nn.LayerNorm(x, []int{x.Rank() - 1}, cfg.LayerNormEps, gamma, beta, nil)
}

func dropout(scope *model.Scope, x *Node, rate float64) *Node {
	if rate <= 0 || !scope.IsTraining(x.Graph()) {
		return x
	}
	return layers.Dropout(scope, x, Scalar(x.Graph(), x.DType(), rate))
}

func act(cfg *Config) activation.Type {
	switch cfg.HiddenAct {
	case "relu":
		return activation.TypeRelu
	case "gelu_new", "gelu_pytorch_tanh":
		return activation.TypeGeluApprox
	}
	return activation.TypeGelu
}

// Encode runs MPNet over a batch: ids int32 [batch, seq], mask [batch, seq] with 1 for real
// tokens (right padding, as toolret's tokenizer pads). MPNet has no token types: types is
// ignored. It returns the last hidden states [batch, seq, hidden].
func Encode(scope *model.Scope, cfg *Config, ids, mask *Node) *Node {
	return Layers(scope, cfg, Embed(scope, cfg, ids), mask)
}

// Embed is the embedding layer: word + absolute position embeddings, LayerNorm and dropout.
// Positions are numbered as HF numbers the tokens of a right-padded row: pad_token_id + 1 + i
// for token i (padding positions differ from HF's, which only padding itself sees).
func Embed(scope *model.Scope, cfg *Config, ids *Node) *Node {
	g := ids.Graph()
	seq := ids.Shape().Dimensions[1]
	if seq > cfg.MaxTokens() {
		exceptions.Panicf("mpnet: sequence length %d exceeds the %d tokens max_position_embeddings %d allows", seq, cfg.MaxTokens(), cfg.MaxPositionEmbeddings)
	}
	emb := scope.At("embeddings")
	words := variable(emb.In("word_embeddings"), cfg, g, "weight", cfg.VocabSize, cfg.HiddenSize)
	positions := variable(emb.In("position_embeddings"), cfg, g, "weight", cfg.MaxPositionEmbeddings, cfg.HiddenSize)
	x := Gather(words, InsertAxes(ConvertDType(ids, dtypes.Int32), -1))
	first := cfg.PadTokenID + 1
	x = Add(x, InsertAxes(Slice(positions, AxisRange(first, first+seq)), 0))
	x = layerNorm(emb.In("LayerNorm"), cfg, x)
	return dropout(scope, x, cfg.HiddenDropoutProb)
}

// Bucket is MPNet's relative_position_bucket: the bucket of relative position rel (key
// position minus query position) among buckets (half for keys before the query, half after;
// exact up to a quarter of buckets, then logarithmic up to maxDistance).
func Bucket(rel, buckets int) int {
	half := buckets / 2
	ret := 0
	n := -rel
	if n < 0 {
		ret += half
		n = -n
	}
	exact := half / 2
	if n < exact {
		return ret + n
	}
	// float32 as torch computes it, truncated toward zero as .to(torch.long) does.
	large := exact + int(float32(math.Log(float64(float32(n)/float32(exact))))/float32(math.Log(float64(maxDistance)/float64(exact)))*float32(half-exact))
	return ret + min(large, half-1)
}

// positionBias is the relative-position bias every layer adds to its attention scores:
// [1, heads, seq, seq] from encoder.relative_attention_bias [buckets, heads].
func positionBias(scope *model.Scope, cfg *Config, g *Graph, seq int) *Node {
	table := variable(scope.At("encoder").In("relative_attention_bias"), cfg, g, "weight", cfg.RelativeBuckets, cfg.NumAttentionHeads)
	idx := make([]int32, seq*seq)
	for q := 0; q < seq; q++ {
		for k := 0; k < seq; k++ {
			idx[q*seq+k] = int32(Bucket(k-q, cfg.RelativeBuckets))
		}
	}
	b := Gather(table, Reshape(Const(g, idx), seq, seq, 1)) // [seq, seq, heads]
	return InsertAxes(TransposeAllDims(b, 2, 0, 1), 0)
}

// Layers runs the transformer layers over embedded inputs x [batch, seq, hidden] (Embed's
// output, possibly extended: the relative bias covers any length) with mask [batch, seq].
func Layers(scope *model.Scope, cfg *Config, x, mask *Node) *Node {
	g := x.Graph()
	batch, seq := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	dt := cfg.dtype()
	// HF's additive mask (1 - mask) * finfo.min over the keys, plus the shared position bias.
	addMask := MulScalar(OneMinus(ConvertDType(mask, dt)), lowest(dt))
	bias := Add(Reshape(addMask, batch, 1, 1, seq), positionBias(scope, cfg, g, seq)) // [B, heads, S, S]
	enc := scope.At("encoder").In("layer")
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		x = layer(enc.In("%d", l), cfg, x, bias)
	}
	return x
}

func lowest(dt dtypes.DType) float64 {
	if dt == dtypes.Float64 {
		return -math.MaxFloat64
	}
	return -math.MaxFloat32
}

func layer(scope *model.Scope, cfg *Config, x, bias *Node) *Node {
	g := x.Graph()
	dims := x.Shape().Dimensions
	batch, seq, hidden := dims[0], dims[1], dims[2]
	heads := cfg.NumAttentionHeads
	dh := hidden / heads

	attn := scope.In("attention")
	self := attn.In("attn")
	q := Reshape(dense(self.In("q"), cfg, x, hidden), batch, seq, heads, dh)
	k := Reshape(dense(self.In("k"), cfg, x, hidden), batch, seq, heads, dh)
	v := Reshape(dense(self.In("v"), cfg, x, hidden), batch, seq, heads, dh)
	scores := MulScalar(Einsum("bqhd,bkhd->bhqk", q, k), 1/math.Sqrt(float64(dh)))
	probs := Softmax(Add(scores, bias), -1)
	if cfg.AttentionProbsDropoutProb > 0 && scope.IsTraining(g) {
		probs = layers.Dropout(scope, probs, Scalar(g, probs.DType(), cfg.AttentionProbsDropoutProb))
	}
	ctx := Reshape(Einsum("bhqk,bkhd->bqhd", probs, v), batch, seq, hidden)
	a := dense(self.In("o"), cfg, ctx, hidden)
	a = dropout(scope, a, cfg.HiddenDropoutProb)
	x = layerNorm(attn.In("LayerNorm"), cfg, Add(a, x))

	inter := dense(scope.In("intermediate").In("dense"), cfg, x, cfg.IntermediateSize, act(cfg))
	output := scope.In("output")
	o := dense(output.In("dense"), cfg, inter, hidden)
	o = dropout(scope, o, cfg.HiddenDropoutProb)
	return layerNorm(output.In("LayerNorm"), cfg, Add(o, x))
}

// Pool reduces hidden [batch, seq, hidden] to [batch, hidden] (or returns hidden unchanged
// for pooling.None); the pooler is dense + tanh over the first token, as HF's MPNetPooler.
func Pool(scope *model.Scope, cfg *Config, hidden, mask *Node, p pooling.Pooling) *Node {
	return pooling.Pool(hidden, mask, p, func(cls *Node) *Node {
		return Tanh(dense(scope.At("pooler").In("dense"), cfg, cls, cfg.HiddenSize))
	})
}
