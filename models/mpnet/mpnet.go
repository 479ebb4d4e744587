package mpnet

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/toolret/toolret/models/hflayers"
	"github.com/toolret/toolret/models/pooling"
)

// spec is what the shared HF blocks need of cfg.
func spec(cfg *Config) hflayers.Spec {
	return hflayers.Spec{DType: cfg.dtype(), InitRange: cfg.InitializerRange, LayerNormEps: cfg.LayerNormEps}
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
	words := spec(cfg).Variable(emb.In("word_embeddings"), g, "weight", cfg.VocabSize, cfg.HiddenSize)
	positions := spec(cfg).Variable(emb.In("position_embeddings"), g, "weight", cfg.MaxPositionEmbeddings, cfg.HiddenSize)
	x := Gather(words, InsertAxes(ConvertDType(ids, dtypes.Int32), -1))
	first := cfg.PadTokenID + 1
	x = Add(x, InsertAxes(Slice(positions, AxisRange(first, first+seq)), 0))
	x = spec(cfg).LayerNorm(emb.In("LayerNorm"), x)
	return hflayers.Dropout(scope, x, cfg.HiddenDropoutProb)
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
	table := spec(cfg).Variable(scope.At("encoder").In("relative_attention_bias"), g, "weight", cfg.RelativeBuckets, cfg.NumAttentionHeads)
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
	addMask := MulScalar(OneMinus(ConvertDType(mask, dt)), hflayers.Lowest(dt))
	bias := Add(Reshape(addMask, batch, 1, 1, seq), positionBias(scope, cfg, g, seq)) // [B, heads, S, S]
	enc := scope.At("encoder").In("layer")
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		x = layer(enc.In("%d", l), cfg, x, bias)
	}
	return x
}

func layer(scope *model.Scope, cfg *Config, x, bias *Node) *Node {
	g := x.Graph()
	dims := x.Shape().Dimensions
	batch, seq, hidden := dims[0], dims[1], dims[2]
	heads := cfg.NumAttentionHeads
	dh := hidden / heads

	attn := scope.In("attention")
	self := attn.In("attn")
	q := Reshape(spec(cfg).Dense(self.In("q"), x, hidden), batch, seq, heads, dh)
	k := Reshape(spec(cfg).Dense(self.In("k"), x, hidden), batch, seq, heads, dh)
	v := Reshape(spec(cfg).Dense(self.In("v"), x, hidden), batch, seq, heads, dh)
	scores := MulScalar(hflayers.ComputeEinsum(scope, "bqhd,bkhd->bhqk", q, k), 1/math.Sqrt(float64(dh)))
	probs := Softmax(Add(scores, bias), -1)
	if cfg.AttentionProbsDropoutProb > 0 && scope.IsTraining(g) {
		probs = layers.Dropout(scope, probs, Scalar(g, probs.DType(), cfg.AttentionProbsDropoutProb))
	}
	ctx := Reshape(hflayers.ComputeEinsum(scope, "bhqk,bkhd->bqhd", probs, v), batch, seq, hidden)
	a := spec(cfg).Dense(self.In("o"), ctx, hidden)
	a = hflayers.Dropout(scope, a, cfg.HiddenDropoutProb)
	x = spec(cfg).LayerNorm(attn.In("LayerNorm"), Add(a, x))

	inter := spec(cfg).Dense(scope.In("intermediate").In("dense"), x, cfg.IntermediateSize, hflayers.Activation(cfg.HiddenAct))
	output := scope.In("output")
	o := spec(cfg).Dense(output.In("dense"), inter, hidden)
	o = hflayers.Dropout(scope, o, cfg.HiddenDropoutProb)
	return spec(cfg).LayerNorm(output.In("LayerNorm"), Add(o, x))
}

// Pool reduces hidden [batch, seq, hidden] to [batch, hidden] (or returns hidden unchanged
// for pooling.None); the pooler is dense + tanh over the first token, as HF's MPNetPooler.
func Pool(scope *model.Scope, cfg *Config, hidden, mask *Node, p pooling.Pooling) *Node {
	return pooling.Pool(hidden, mask, p, func(cls *Node) *Node {
		return Tanh(spec(cfg).Dense(scope.At("pooler").In("dense"), cls, cfg.HiddenSize))
	})
}
