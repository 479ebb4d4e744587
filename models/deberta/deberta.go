package deberta

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
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
	PoolPooler = pooling.Pooler // the ContextPooler: pooler_hidden_act(dense([CLS]))
	PoolNone   = pooling.None   // no pooling: all token states
)

// Bucket is HF's relative position of query i to key j, d = i - j: d itself without
// buckets (buckets <= 0) or when |d| <= buckets/2, else sign(d)·(mid + ceil(log(|d|/mid) /
// log((maxRel-1)/mid) · (mid-1))) with mid = buckets/2, computed in float32 as PyTorch does.
func Bucket(d, buckets, maxRel int) int {
	mid := buckets / 2
	a := d
	if a < 0 {
		a = -a
	}
	if buckets <= 0 || a <= mid {
		return d
	}
	lg := func(x float32) float32 { return float32(math.Log(float64(x))) }
	x := lg(float32(a)/float32(mid)) / lg(float32(float64(maxRel-1)/float64(mid))) * float32(mid-1)
	v := int(math.Ceil(float64(x))) + mid
	if d < 0 {
		return -v
	}
	return v
}

// relIndex returns, for a sequence of length seq, the row of rel_embeddings each pair uses:
// idx[i·seq+j] = clamp(Bucket(i-j) + span, 0, 2·span-1). c2p reads query i against row
// idx(i, j); p2c reads key j against row clamp(-Bucket(j-i) + span), which is the same row
// because Bucket is odd.
func relIndex(cfg *Config, seq int) []int {
	span := cfg.Span()
	byDist := make([]int, 2*seq-1) // d = i - j from -(seq-1)
	for k := range byDist {
		byDist[k] = min(max(Bucket(k-(seq-1), cfg.PositionBuckets, cfg.MaxRelative())+span, 0), 2*span-1)
	}
	idx := make([]int, seq*seq)
	for i := 0; i < seq; i++ {
		for j := 0; j < seq; j++ {
			idx[i*seq+j] = byDist[i-j+seq-1]
		}
	}
	return idx
}

func variable(scope *model.Scope, cfg *Config, g *Graph, name string, dims ...int) *Node {
	return hflayers.Spec{DType: cfg.dtype(), InitRange: cfg.InitializerRange}.Variable(scope, g, name, dims...)
}

// linear is an HF Linear's weight [out, in] and bias [out] (nil without bias) under scope,
// whose compute dtype (hflayers.ComputeParam) its product runs in.
type linear struct {
	scope *model.Scope
	w, b  *Node
}

func newLinear(scope *model.Scope, cfg *Config, g *Graph, in, out int, bias bool) linear {
	l := linear{scope: scope, w: variable(scope, cfg, g, "weight", out, in)}
	if bias {
		l.b = variable(scope, cfg, g, "bias", out)
	}
	return l
}

func (l linear) apply(x *Node, act ...activation.Type) *Node {
	return hflayers.ComputeDense(l.scope, x, l.w, l.b, act...)
}

func layerNorm(scope *model.Scope, cfg *Config, x *Node) *Node {
	return hflayers.Spec{DType: cfg.dtype(), InitRange: cfg.InitializerRange, LayerNormEps: cfg.LayerNormEps}.LayerNorm(scope, x)
}

func dropout(scope *model.Scope, x *Node, rate float64) *Node {
	return hflayers.Dropout(scope, x, rate)
}

// actType maps an HF activation name (Config.Validate admits gelu, gelu_new,
// gelu_pytorch_tanh, relu, tanh) to GoMLX's.
func actType(name string) activation.Type { return hflayers.Activation(name) }

// lowest is torch.finfo(dtype).min, what XSoftmax writes into masked scores.
func lowest(dt dtypes.DType) float64 { return hflayers.Lowest(dt) }

// Encode runs DeBERTa over a batch: ids and types are int32 [batch, seq] (types may be nil for
// all zeros; they are ignored when type_vocab_size is 0), mask is [batch, seq] with 1 for
// real tokens and 0 for padding (any numeric dtype). It returns the last hidden state [batch,
// seq, hidden] in cfg.DType. Padding never changes the states of real tokens (the states of
// padding positions are HF's too). Dropout is active only when the scope is training.
// Graph-building errors panic, as GoMLX graph functions do; model.Exec turns them into errors.
func Encode(scope *model.Scope, cfg *Config, ids, types, mask *Node) *Node {
	return Layers(scope, cfg, Embed(scope, cfg, ids, types, mask), mask)
}

// Embed is the embedding layer of Encode: word (+ absolute position, + token type)
// embeddings, the embedding_size projection, LayerNorm, zeroed at padding, dropout:
// [batch, seq, hidden]. Models that append their own inputs after the embedding layer
// (models/refiner) call Embed, concatenate, then Layers.
func Embed(scope *model.Scope, cfg *Config, ids, types, mask *Node) *Node {
	g := ids.Graph()
	dt := cfg.dtype()
	seq := ids.Shape().Dimensions[1]
	if seq > cfg.MaxPositionEmbeddings {
		exceptions.Panicf("deberta: sequence length %d exceeds max_position_embeddings %d", seq, cfg.MaxPositionEmbeddings)
	}
	h, e := cfg.HiddenSize, cfg.Embedding()

	// At scopes: encoding twice in one graph (query and tool towers) reuses the weights.
	emb := scope.At("embeddings")
	words := variable(emb.In("word_embeddings"), cfg, g, "weight", cfg.VocabSize, e)
	x := Gather(words, InsertAxes(ConvertDType(ids, dtypes.Int32), -1)) // [B, S, E]
	if cfg.PositionBiasedInput {
		pos := variable(emb.In("position_embeddings"), cfg, g, "weight", cfg.MaxPositionEmbeddings, e)
		x = Add(x, InsertAxes(Slice(pos, AxisRange(0, seq)), 0))
	}
	if cfg.TypeVocabSize > 0 {
		te := variable(emb.In("token_type_embeddings"), cfg, g, "weight", cfg.TypeVocabSize, e)
		if types == nil {
			x = Add(x, InsertAxes(Slice(te, AxisRange(0, 1)), 0))
		} else {
			x = Add(x, Gather(te, InsertAxes(ConvertDType(types, dtypes.Int32), -1)))
		}
	}
	if e != h {
		x = newLinear(emb.In("embed_proj"), cfg, g, e, h, false).apply(x)
	}
	x = layerNorm(emb.In("LayerNorm"), cfg, x)
	isReal := NotEqual(ConvertDType(mask, dt), ScalarZero(g, dt)) // [B, S]
	x = Mul(x, InsertAxes(ConvertDType(isReal, dt), -1))
	return dropout(scope, x, cfg.HiddenDropoutProb)
}

// Layers runs the disentangled-attention layers of Encode over embedded inputs x [batch, seq,
// hidden] (Embed's output, possibly extended) with mask [batch, seq] (1 for real positions);
// relative positions are those of the sequence x.
func Layers(scope *model.Scope, cfg *Config, x, mask *Node) *Node {
	g := x.Graph()
	dt := cfg.dtype()
	batch, seq, h := x.Shape().Dimensions[0], x.Shape().Dimensions[1], cfg.HiddenSize
	isReal := NotEqual(ConvertDType(mask, dt), ScalarZero(g, dt)) // [B, S]

	// XSoftmax's mask: pair (i, j) takes part when both i and j are real tokens.
	keep := LogicalAnd(BroadcastToDims(Reshape(isReal, batch, 1, seq, 1), batch, 1, seq, seq),
		BroadcastToDims(Reshape(isReal, batch, 1, 1, seq), batch, 1, seq, seq))
	keep = BroadcastToDims(keep, batch, cfg.NumAttentionHeads, seq, seq)

	enc := scope.At("encoder")
	var rel *relative
	if cfg.RelativeAttention {
		r := variable(enc.In("rel_embeddings"), cfg, g, "weight", 2*cfg.Span(), h)
		if cfg.normRel() {
			r = layerNorm(enc.In("LayerNorm"), cfg, r)
		}
		rel = &relative{emb: r, c2p: cfg.has("c2p"), p2c: cfg.has("p2c")}
		idx := relIndex(cfg, seq)
		span2 := 2 * cfg.Span()
		// Flat gather indices into [S·2span, ...] tables: query row i (c2p), key row j (p2c).
		ci, pi := make([]int32, seq*seq), make([]int32, seq*seq)
		for i := 0; i < seq; i++ {
			for j := 0; j < seq; j++ {
				ci[i*seq+j] = int32(i*span2 + idx[i*seq+j])
				pi[i*seq+j] = int32(j*span2 + idx[i*seq+j])
			}
		}
		if rel.c2p {
			rel.c2pIdx = Const(g, tensors.FromFlatDataAndDimensions(ci, seq, seq, 1))
		}
		if rel.p2c {
			rel.p2cIdx = Const(g, tensors.FromFlatDataAndDimensions(pi, seq, seq, 1))
		}
	}
	layersScope := enc.In("layer")
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		x = layer(layersScope.In("%d", l), cfg, x, keep, rel)
	}
	return x
}

// relative is what every layer's disentangled attention shares: the (normalised) relative
// position embeddings [2·span, hidden] and the gather indices of each pair.
type relative struct {
	emb            *Node
	c2p, p2c       bool
	c2pIdx, p2cIdx *Node // [S, S, 1] into [S·2span] (see Encode)
}

func layer(scope *model.Scope, cfg *Config, x, keep *Node, rel *relative) *Node {
	g := x.Graph()
	dims := x.Shape().Dimensions
	batch, seq, hidden := dims[0], dims[1], dims[2]
	heads := cfg.NumAttentionHeads
	dh := hidden / heads

	attn := scope.In("attention")
	self := attn.In("self")
	qp := newLinear(self.In("query_proj"), cfg, g, hidden, hidden, true)
	kp := newLinear(self.In("key_proj"), cfg, g, hidden, hidden, true)
	vp := newLinear(self.In("value_proj"), cfg, g, hidden, hidden, true)
	split := func(y *Node) *Node { return Reshape(y, batch, seq, heads, dh) }
	q, k, v := split(qp.apply(x)), split(kp.apply(x)), split(vp.apply(x))

	// scale = sqrt(d · (1 + |pos_att_type|)), in the computation dtype as HF's float32.
	scale := Sqrt(Scalar(g, x.DType(), float64(dh*cfg.scaleFactor())))
	scores := Div(hflayers.ComputeEinsum(scope, "bihd,bjhd->bhij", q, k), scale) // [B, heads, S, S]

	if rel != nil && (rel.c2p || rel.p2c) {
		r := dropout(scope, rel.emb, cfg.HiddenDropoutProb) // HF's pos_dropout
		span2 := rel.emb.Shape().Dimensions[0]
		var bias *Node
		// term gathers a [S, 2span] table per (batch, head) at the pair indices: table t of
		// [S(row), 2span, B, heads] -> [S(i), S(j), B·heads].
		term := func(t, idx *Node) *Node {
			t = Reshape(t, seq*span2, batch*heads)
			return Div(Gather(t, idx), scale)
		}
		if rel.c2p {
			pk := kp
			if !cfg.ShareAttKey {
				pk = newLinear(self.In("pos_key_proj"), cfg, g, hidden, hidden, true)
			}
			posKey := Reshape(pk.apply(r), span2, heads, dh)
			bias = term(hflayers.ComputeEinsum(scope, "bihd,rhd->irbh", q, posKey), rel.c2pIdx)
		}
		if rel.p2c {
			pq := qp
			if !cfg.ShareAttKey {
				pq = newLinear(self.In("pos_query_proj"), cfg, g, hidden, hidden, true)
			}
			posQuery := Reshape(pq.apply(r), span2, heads, dh)
			t := term(hflayers.ComputeEinsum(scope, "bjhd,rhd->jrbh", k, posQuery), rel.p2cIdx)
			if bias == nil {
				bias = t
			} else {
				bias = Add(bias, t)
			}
		}
		bias = TransposeAllDims(Reshape(bias, seq, seq, batch, heads), 2, 3, 0, 1)
		scores = Add(scores, bias)
	}

	// XSoftmax: masked scores set to finfo.min, softmax, masked probabilities set to 0.
	zero := ScalarZero(g, x.DType())
	scores = Where(keep, scores, Scalar(g, x.DType(), lowest(x.DType())))
	probs := Where(keep, Softmax(scores, -1), zero)
	probs = dropout(scope, probs, cfg.AttentionProbsDropoutProb)
	ctx := Reshape(hflayers.ComputeEinsum(scope, "bhij,bjhd->bihd", probs, v), batch, seq, hidden)

	out := attn.In("output")
	a := newLinear(out.In("dense"), cfg, g, hidden, hidden, true).apply(ctx)
	a = dropout(scope, a, cfg.HiddenDropoutProb)
	x = layerNorm(out.In("LayerNorm"), cfg, Add(a, x))

	inter := newLinear(scope.In("intermediate").In("dense"), cfg, g, hidden, cfg.IntermediateSize, true).apply(x, actType(cfg.HiddenAct))
	output := scope.In("output")
	o := newLinear(output.In("dense"), cfg, g, cfg.IntermediateSize, hidden, true).apply(inter)
	o = dropout(scope, o, cfg.HiddenDropoutProb)
	return layerNorm(output.In("LayerNorm"), cfg, Add(o, x))
}

// Pool reduces hidden [batch, seq, hidden] to [batch, hidden] (or returns hidden unchanged
// for PoolNone). mask is [batch, seq] with 1 for real tokens. PoolPooler applies the
// ContextPooler: pooler_dropout (training), dense, pooler_hidden_act over the [CLS] state.
func Pool(scope *model.Scope, cfg *Config, hidden, mask *Node, p Pooling) *Node {
	return pooling.Pool(hidden, mask, p, func(cls *Node) *Node {
		s := scope.At("pooler")
		cls = dropout(s, cls, cfg.PoolerDropout)
		return newLinear(s.In("dense"), cfg, cls.Graph(), cfg.HiddenSize, cfg.HiddenSize, true).apply(cls, actType(cfg.PoolerHiddenAct))
	})
}
